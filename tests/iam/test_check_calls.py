"""The IAM call check's own tests: calls the roles must grant are granted by both deployments,
and calls they must not grant fail, with IAM's matching rules (run by scripts/template_test.sh)."""

import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_calls as cc  # noqa: E402

QUEUES = ["orders", "jobs.fifo"]
TABLE = f"arn:aws:dynamodb:{cc.REGION}:{cc.ACCOUNT}:table/{cc.PREFIX}orders"
INDEX = f"{TABLE}/index/scheduler-perform_at-index"
QUEUE = f"arn:aws:sqs:{cc.REGION}:{cc.ACCOUNT}:orders"


class Matching(unittest.TestCase):
    def test_actions_match_case_insensitively_and_resources_exactly_with_wildcards(self):
        s = [{"Effect": "Allow", "Action": ["DynamoDB:Put*"], "Resource": f"arn:aws:dynamodb:*:*:table/{cc.PREFIX}*"}]
        self.assertTrue(cc.allows(s, "dynamodb:PutItem", TABLE))
        self.assertFalse(cc.allows(s, "dynamodb:DeleteItem", TABLE))
        self.assertFalse(cc.allows(s, "dynamodb:PutItem", TABLE.replace(cc.PREFIX, "SQS-WAITER-")))
        self.assertTrue(cc.allows(s, "dynamodb:PutItem", INDEX), "table/prefix* also covers its index")

    def test_recorded_calls_move_onto_the_checked_deployment(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "1-0.jsonl"), "w") as f:
                for line in [
                    {"deployment": {"queues": ["orders"], "table_prefix": "waiter-"}},
                    {"principal": "poller", "action": "dynamodb:Query",
                     "resource": {"table": "waiter-orders", "index": "scheduler-perform_at-index"}},
                    {"principal": "poller", "action": "sqs:SendMessage", "resource": {"queue": "orders"}},
                    {"principal": "test", "action": "dynamodb:Scan", "resource": {"table": "waiter-orders"}},
                    {"principal": "enqueue", "action": "dynamodb:GetItem", "resource": {"table": "elsewhere"}},
                ]:
                    f.write(json.dumps(line) + "\n")
            calls, queues, outside = cc.read_calls(d)
        self.assertEqual(calls, {("poller", "dynamodb:Query", INDEX), ("poller", "sqs:SendMessage", QUEUE)})
        self.assertEqual(queues, ["orders"])
        self.assertEqual([r["resource"] for r in outside], [{"table": "elsewhere"}],
                         "a function's call outside its deployment is reported; the harness's own is not")


class BothDeployments(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.deployments = {"SAM": cc.sam_statements(QUEUES), "CDK": cc.cdk_statements(QUEUES)}
        cls.with_kms = {"SAM": cc.sam_statements(QUEUES, kms=True), "CDK": cc.cdk_statements(QUEUES, kms=True)}

    def test_what_the_functions_do_is_granted(self):
        calls = {
            ("enqueue", "dynamodb:PutItem", TABLE), ("enqueue", "dynamodb:BatchGetItem", TABLE),
            ("enqueue", "dynamodb:ConditionCheckItem", TABLE), ("enqueue", "dynamodb:DeleteItem", TABLE),
            ("enqueue", "dynamodb:Query", INDEX), ("enqueue", "sqs:SendMessage", QUEUE),
            ("poller", "dynamodb:Query", INDEX), ("poller", "dynamodb:UpdateItem", TABLE),
            ("poller", "dynamodb:DeleteItem", TABLE), ("poller", "sqs:SendMessage", QUEUE),
            ("poller", "sqs:GetQueueUrl", QUEUE),
            # The removals as PartiQL statements (issue 45), from both functions.
            ("poller", "dynamodb:PartiQLDelete", TABLE), ("poller", "dynamodb:PartiQLUpdate", TABLE),
            ("enqueue", "dynamodb:PartiQLDelete", TABLE), ("enqueue", "dynamodb:PartiQLUpdate", TABLE),
        }
        for name, statements in self.deployments.items():
            self.assertEqual(cc.ungranted(calls, statements), [], name)

    def test_what_they_must_not_do_fails(self):
        other_queue = QUEUE.replace("orders", "payroll")
        calls = [
            ("enqueue", "dynamodb:Scan", TABLE),
            ("poller", "dynamodb:ConditionCheckItem", TABLE),
            ("enqueue", "dynamodb:PutItem", TABLE.replace(f"{cc.PREFIX}orders", "payroll")),
            # Another stack's table whose prefix begins with ours (issue 37, defect 1).
            ("enqueue", "dynamodb:PutItem", TABLE.replace(f"{cc.PREFIX}orders", f"{cc.PREFIX}prod-orders")),
            ("poller", "dynamodb:Query", INDEX.replace(f"{cc.PREFIX}orders", f"{cc.PREFIX}prod-orders")),
            # GetQueueUrl only for the managed queues (defect 4).
            ("enqueue", "sqs:GetQueueUrl", other_queue),
            ("poller", "sqs:SendMessage", other_queue),
            ("enqueue", "dynamodb:DeleteTable", TABLE),
        ]
        for name, statements in self.deployments.items():
            self.assertEqual(cc.ungranted(set(calls), statements), sorted(calls), name)
        # The poller queries the index only. The CDK construct grants it just that; SAM's one
        # statement per queue (issue 45, docs/deploy.md "IAM") also lets it query the table,
        # which reads nothing its BatchGetItem and the index (projecting all) cannot.
        table_query = {("poller", "dynamodb:Query", TABLE)}
        self.assertEqual(cc.ungranted(table_query, self.deployments["CDK"]), sorted(table_query))
        self.assertEqual(cc.ungranted(table_query, self.deployments["SAM"]), [])

    def test_a_kms_encrypted_queues_key_is_granted_to_both_senders_only_when_given(self):
        calls = {("enqueue", "sqs:SendMessage", QUEUE), ("poller", "sqs:SendMessage", QUEUE)}
        for name in self.deployments:
            self.assertEqual(cc.ungranted(cc.kms_calls(calls), self.with_kms[name]), [], name)
            self.assertEqual(len(cc.ungranted(cc.kms_calls(calls), self.deployments[name])), 4, name)


if __name__ == "__main__":
    unittest.main(verbosity=2)
