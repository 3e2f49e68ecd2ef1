"""Unit tests of the installed client: no function, a fake Lambda client that records what it was
sent and answers what it is told. The schema is read from the repository (schema/)."""

from __future__ import annotations

import io
import json
import re
import typing
import unittest
from pathlib import Path
from typing import Any, Callable

from botocore.exceptions import (
    ClientError,
    EndpointConnectionError,
    NoCredentialsError,
    PartialCredentialsError,
    ReadTimeoutError,
)

import sqs_waiter
from sqs_waiter import Client, contract
from sqs_waiter.errors import SqsWaiterError

SCHEMA = json.loads((Path(__file__).resolve().parents[3] / "schema" / "contract.schema.json").read_text())
DEFS: dict[str, Any] = SCHEMA["$defs"]
JOB_REPLY = {"status": "scheduled", "job_id": "j", "queue": "q"}


class FakeLambda:
    def __init__(self, *answers: dict[str, Any]) -> None:
        self.answers = list(answers)
        self.sent: list[dict[str, Any]] = []

    def invoke(self, *, FunctionName: str, Payload: bytes) -> Any:
        self.sent.append(json.loads(Payload))
        answer: dict[str, Any] = self.answers.pop(0) if self.answers else {"payload": JOB_REPLY}
        if "raise" in answer:
            raise answer["raise"]
        out: dict[str, Any] = {"StatusCode": 200, "Payload": io.BytesIO(json.dumps(answer["payload"]).encode())}
        if "function_error" in answer:
            out["FunctionError"] = answer["function_error"]
        return out


def batch(n: int) -> dict[str, Any]:
    return {"payload": {"results": [JOB_REPLY] * n}}


# One call per request form the function reads: a form the schema adds and the client lacks fails.
CALLS: dict[str, Callable[[Client], object]] = {
    "Job": lambda c: c.enqueue({"queue": "q", "message_body": "b"}),
    "EnqueueMany": lambda c: c.enqueue_many([{"queue": "q", "message_body": "b"}]),
    "Get": lambda c: c.get("q", "j"),
    "Cancel": lambda c: c.cancel("q", "j"),
    "Reschedule": lambda c: c.reschedule({"queue": "q", "job_id": "j", "delay_seconds": 60}),
    "List": lambda c: c.list({"queue": "q", "from": "2030-01-01T00:00:00Z"}),
    "CancelMany": lambda c: c.cancel_many({"queue": "q", "prefix": "a"}),
    "ListParked": lambda c: c.parked({"queue": "q"}),
    "Redrive": lambda c: c.redrive("q", "j"),
    "RedriveMany": lambda c: c.redrive_many("q", ["a", "b"]),
    "RedriveAll": lambda c: c.redrive_all("q", limit=10),
    "Stats": lambda c: c.stats({"queue": "q"}),
    "Replay": lambda c: c.replay({"queue": "q", "job_id": "j"}),
    "Retry": lambda c: c.retry({"queue": "q", "job_id": "j", "attempt": 1, "message_body": "b"}),
    "Pause": lambda c: c.pause({"queue": "q"}),
    "Resume": lambda c: c.resume({"queue": "q", "job_id": "j"}),
    "Trigger": lambda c: c.trigger("q", "j"),
    "Preview": lambda c: c.preview({"repeat": {"every_s": 60}}),
    "Queues": lambda c: c.queues(),
}
BATCHES = {"EnqueueMany": 1, "RedriveMany": 2}


class TypesMatchTheSchema(unittest.TestCase):
    def test_every_request_and_reply_has_the_schemas_fields_and_required_ones(self) -> None:
        records = {name: d for name, d in DEFS.items() if d.get("type") == "object"}
        self.assertGreater(len(records), 30)
        for name, d in records.items():
            with self.subTest(type=name):
                typed = getattr(contract, name)
                self.assertEqual(set(typing.get_type_hints(typed)), set(d.get("properties", {})))
                self.assertEqual(set(typed.__required_keys__), set(d.get("required", [])))

    def test_enumerations_and_constants_are_the_schemas(self) -> None:
        status = [v["const"] for v in DEFS["JobStatus"]["oneOf"]]
        self.assertEqual(list(typing.get_args(contract.JobStatus)), status)
        extra = SCHEMA["x-sqs-waiter"]
        self.assertEqual(contract.MAX_JOBS_PER_REQUEST, extra["limits"]["max_jobs_per_request"])
        self.assertEqual(contract.ATTEMPT_ATTRIBUTE, extra["attributes"]["attempt"])
        self.assertEqual(contract.ACTIONS, tuple((f["action"], f["request"], f["reply"]) for f in extra["actions"]))
        self.assertEqual(contract.RETRYABLE_ERROR_TYPES, {t["name"] for t in extra["error_types"] if t["retryable"]})


class EveryAction(unittest.TestCase):
    def test_each_form_has_a_method_that_sends_its_action_with_the_schemas_fields(self) -> None:
        self.assertEqual(set(CALLS), {request for _, request, _ in contract.ACTIONS})
        for action, request, _ in contract.ACTIONS:
            with self.subTest(form=request):
                fake = FakeLambda(batch(BATCHES[request]) if request in BATCHES else {"payload": JOB_REPLY})
                CALLS[request](Client("f", fake))
                (sent,) = fake.sent
                self.assertEqual(sent.pop("action"), action)
                fields = DEFS[request]
                self.assertLessEqual(set(sent), set(fields.get("properties", {})), sent)
                self.assertLessEqual(set(fields.get("required", [])), set(sent), sent)

    def test_the_function_name_is_given_else_the_environment_else_the_default(self) -> None:
        self.assertEqual(Client("mine:orders--send", FakeLambda()).function_name, "mine:orders--send")
        import os

        saved = os.environ.pop("SQS_WAITER_FUNCTION", None)
        try:
            self.assertEqual(Client(lambda_client=FakeLambda()).function_name, "sqs-waiter-enqueue")
            os.environ["SQS_WAITER_FUNCTION"] = "from-env"
            self.assertEqual(Client(lambda_client=FakeLambda()).function_name, "from-env")
        finally:
            os.environ.pop("SQS_WAITER_FUNCTION", None)
            if saved is not None:
                os.environ["SQS_WAITER_FUNCTION"] = saved


class Errors(unittest.TestCase):
    def test_each_error_type_raises_its_class_and_says_whether_to_retry(self) -> None:
        for t in SCHEMA["x-sqs-waiter"]["error_types"]:
            with self.subTest(error_type=t["name"]):
                payload = {"errorType": t["name"], "errorMessage": "queue: must be one of orders"}
                client = Client("f", FakeLambda({"payload": payload, "function_error": "Unhandled"}))
                with self.assertRaises(SqsWaiterError) as raised:
                    client.get("q", "j")
                e = raised.exception
                self.assertEqual(type(e).__name__, t["name"])
                self.assertEqual((e.error_type, e.retryable), (t["name"], t["retryable"]))

    def test_invalid_request_names_the_field_and_the_rule(self) -> None:
        payload = {"errorType": "InvalidRequest", "errorMessage": "message_attributes.a.data_type: is required"}
        with self.assertRaises(sqs_waiter.InvalidRequest) as raised:
            Client("f", FakeLambda({"payload": payload, "function_error": "Unhandled"})).get("q", "j")
        self.assertEqual((raised.exception.field, raised.exception.rule), ("message_attributes.a.data_type", "is required"))
        self.assertEqual(str(raised.exception), "message_attributes.a.data_type: is required")

    def test_an_unknown_error_type_and_a_crash_are_not_retried(self) -> None:
        crash = {"payload": {"errorType": "Runtime.ExitError", "errorMessage": "exit status 101"}, "function_error": "Unhandled"}
        with self.assertRaises(sqs_waiter.UnknownFunctionError) as raised:
            Client("f", FakeLambda(crash)).get("q", "j")
        self.assertEqual((raised.exception.error_type, raised.exception.retryable), ("Runtime.ExitError", False))
        # A reply that merely has a status is a reply, not an error.
        self.assertEqual(Client("f", FakeLambda()).get("q", "j")["status"], "scheduled")

    def test_lambdas_own_failures_are_retryable_when_transient(self) -> None:
        def client_error(code: str) -> ClientError:
            return ClientError({"Error": {"Code": code, "Message": "m"}}, "Invoke")

        cases: list[tuple[Exception, bool]] = [
            (client_error("TooManyRequestsException"), True),
            (client_error("ServiceException"), True),
            (client_error("ResourceNotFoundException"), False),
            (client_error("AccessDeniedException"), False),
            (EndpointConnectionError(endpoint_url="http://127.0.0.1:1"), True),
            (ReadTimeoutError(endpoint_url="http://127.0.0.1:1"), True),
            (NoCredentialsError(), False),
            (PartialCredentialsError(provider="env", cred_var="AWS_SECRET_ACCESS_KEY"), False),
        ]
        for error, retryable in cases:
            with self.subTest(error=str(error)):
                with self.assertRaises(sqs_waiter.InvokeError) as raised:
                    Client("f", FakeLambda({"raise": error})).get("q", "j")
                self.assertEqual(raised.exception.retryable, retryable)
                self.assertIs(raised.exception.__cause__, error)

    def test_a_batchs_failed_entries_are_errors_in_place(self) -> None:
        failure = {"status": "error", "error": {"type": "Throttled", "message": "slow down", "retryable": True}}
        fake = FakeLambda({"payload": {"results": [JOB_REPLY, failure]}})
        first, second = Client("f", fake).enqueue_many([{"queue": "q", "message_body": "a"}, {"queue": "q", "message_body": "b"}])
        self.assertEqual(first, JOB_REPLY)
        assert isinstance(second, sqs_waiter.Throttled)
        self.assertTrue(second.retryable)
        # A type this client does not know keeps the function's word on retrying.
        newer = {"status": "error", "error": {"type": "Overloaded", "message": "later", "retryable": True}}
        (only,) = Client("f", FakeLambda({"payload": {"results": [newer]}})).enqueue_many([{"queue": "q", "message_body": "a"}])
        assert isinstance(only, sqs_waiter.UnknownFunctionError)
        self.assertTrue(only.retryable)

    def test_a_requests_own_action_field_cannot_change_the_action(self) -> None:
        fake = FakeLambda()
        Client("f", fake).call("get", {"queue": "q", "job_id": "j", "action": "cancel"})
        self.assertEqual(fake.sent[0]["action"], "get")


class Splitting(unittest.TestCase):
    def jobs(self, n: int, body: int) -> list[contract.Job]:
        return [{"queue": "orders", "message_body": "x" * body, "job_id": f"job-{i}"} for i in range(n)]

    def test_by_count_and_by_bytes_in_order(self) -> None:
        self.assertEqual([len(r) for r in sqs_waiter.split(self.jobs(2500, 10))], [1000, 1000, 500])
        big = self.jobs(1000, 7 * 1024)
        requests = sqs_waiter.split(big)
        self.assertGreaterEqual(len(requests), 2)
        for r in requests:
            payload = json.dumps({"action": "enqueue", "jobs": list(r)}, separators=(",", ":")).encode()
            self.assertLess(len(payload), contract.MAX_INVOKE_PAYLOAD_BYTES)
        self.assertEqual([j.get("job_id") for r in requests for j in r], [f"job-{i}" for i in range(1000)])

    def test_a_job_over_the_budget_goes_alone_and_enqueue_many_sends_each_request(self) -> None:
        jobs = self.jobs(3, 10)
        jobs.insert(1, {"queue": "orders", "message_body": "y" * 300})
        self.assertEqual([len(r) for r in sqs_waiter.split(jobs, 200)], [1, 1, 2])
        self.assertEqual(sqs_waiter.split([]), [])
        fake = FakeLambda(batch(1000), batch(1000), batch(500))
        self.assertEqual(len(Client("f", fake).enqueue_many(self.jobs(2500, 10))), 2500)
        self.assertEqual([len(s["jobs"]) for s in fake.sent], [1000, 1000, 500])

    def test_a_failed_request_is_the_error_of_each_of_its_jobs_and_the_others_keep_their_results(self) -> None:
        """Issue 82, defect 9: a later request's failure once dropped the earlier requests'
        results, although their jobs were stored."""
        failed = {"payload": {"errorType": "Throttled", "errorMessage": "slow down"}, "function_error": "Unhandled"}
        fake = FakeLambda(batch(1000), failed, batch(500))
        results = Client("f", fake).enqueue_many(self.jobs(2500, 10))
        self.assertEqual(len(results), 2500)
        self.assertEqual([len(s["jobs"]) for s in fake.sent], [1000, 1000, 500])
        self.assertTrue(all(r == JOB_REPLY for r in results[:1000] + results[2000:]))
        errors = results[1000:2000]
        self.assertTrue(all(isinstance(e, sqs_waiter.Throttled) and e.retryable for e in errors), errors[:1])


class Received(unittest.TestCase):
    RECEIVED = {
        "MessageId": "m-1",
        "Body": '{"order":7}',
        "Attributes": {"MessageGroupId": "g-1"},
        "MessageAttributes": {
            "waiter.attempt": {"DataType": "Number", "StringValue": "3"},
            "kind": {"DataType": "String", "StringValue": "invoice"},
            "raw": {"DataType": "Binary", "BinaryValue": b"\x00\x01"},
        },
    }
    RECORD = {
        "messageId": "m-2",
        "body": "x",
        "attributes": {},
        "messageAttributes": {"waiter.job_id": {"dataType": "String", "stringValue": "o-8~3"}},
        "eventSourceARN": "arn:aws:sqs:eu-west-1:123456789012:orders",
    }

    def test_a_received_message_is_retried_with_its_body_attributes_attempt_and_group(self) -> None:
        r = sqs_waiter.retry_of(self.RECEIVED, queue="https://sqs.eu-west-1.amazonaws.com/123456789012/jobs.fifo", job_id="o-7")
        self.assertEqual((r["queue"], r["job_id"], r["attempt"], r["message_body"]), ("jobs.fifo", "o-7", 3, '{"order":7}'))
        self.assertEqual(r.get("message_group_id"), "g-1")
        attributes = r.get("message_attributes", {})
        self.assertEqual(attributes["raw"].get("binary_value"), "AAE=")
        self.assertEqual(attributes["kind"].get("string_value"), "invoice")

    def test_the_attempt_is_read_as_the_rust_client_reads_it(self) -> None:
        cases = {"3": 3, " 3 ": 3, "+3": 3, "2.5": 1, "0": 1, "-2": 1, "1_0": 1, "\uff14": 1, "4294967295": 4294967295,
                 "4294967296": 1, "": 1, "x": 1}
        for value, want in cases.items():
            with self.subTest(value=value):
                attributes: dict[str, contract.MessageAttribute] = {
                    contract.ATTEMPT_ATTRIBUTE: {"data_type": "Number", "string_value": value}}
                self.assertEqual(sqs_waiter.attempt_of(attributes), want)
        self.assertEqual(sqs_waiter.attempt_of({}), 1)

    def test_a_lambda_record_names_its_queue_and_a_copy_its_own_id(self) -> None:
        r = sqs_waiter.retry_of(self.RECORD, job_id="o-8")
        self.assertEqual((r["queue"], r["job_id"], r["attempt"]), ("orders", "o-8~3", 1))
        self.assertEqual(sqs_waiter.replay_of(self.RECORD), {"queue": "orders", "job_id": "o-8~3"})

    def test_a_message_that_names_no_job_is_refused_and_nothing_is_sent(self) -> None:
        fake = FakeLambda()
        plain = {"messageId": "m-3", "body": "x", "messageAttributes": {}, "eventSourceARN": "arn:aws:sqs:r:1:orders"}
        with self.assertRaises(sqs_waiter.NotAWaiterMessage) as raised:
            Client("f", fake).retry_message(plain)
        self.assertIn("waiter.job_id", str(raised.exception))
        with self.assertRaises(sqs_waiter.NotAWaiterMessage) as no_queue:
            Client("f", fake).retry_message(self.RECEIVED, job_id="o-7")
        self.assertTrue(str(no_queue.exception).startswith("queue:"))
        self.assertEqual(fake.sent, [])

    def test_the_helper_sends_the_policy_with_the_message(self) -> None:
        fake = FakeLambda()
        Client("f", fake).retry_message(self.RECORD, backoff={"base_s": 2, "jitter": False}, max_attempts=4, error="boom")
        (sent,) = fake.sent
        self.assertEqual((sent["action"], sent["backoff"], sent["max_attempts"], sent["error"]),
                         ("retry", {"base_s": 2, "jitter": False}, 4, "boom"))


if __name__ == "__main__":
    unittest.main()


class Packaging(unittest.TestCase):
    def test_the_boto3_floor_receives_a_fifo_messages_group(self) -> None:
        """README's FIFO consumer passes MessageSystemAttributeNames, which botocore's SQS model
        has from 1.34.101 on (1.34.100's has not: measured on both wheels), so the floor is at
        least that (issue 82, defect 11)."""
        text = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text()
        found = re.search(r'"boto3>=([0-9.]+)"', text)
        assert found is not None, "pyproject.toml names no boto3 floor"
        self.assertGreaterEqual(tuple(int(p) for p in found.group(1).split(".")), (1, 34, 101))
