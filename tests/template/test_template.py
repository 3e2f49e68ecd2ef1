"""Structural assertions on template.yaml that cfn-lint cannot make: what a first and a second
real deploy need (issue 12). Run by scripts/template_test.sh with the project venv's Python,
which has cfn-lint (for its CloudFormation-aware YAML loader)."""

import os
import unittest

from cfnlint.decode import cfn_yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TEMPLATE = cfn_yaml.load(os.path.join(ROOT, "template.yaml"))
RESOURCES = TEMPLATE["Resources"]


def loop_body(name):
    """The resources of a `Fn::ForEach::<name>` loop: {logical-id pattern: resource}."""
    _, _, body = RESOURCES[f"Fn::ForEach::{name}"]
    return body


class FirstAndSecondDeploy(unittest.TestCase):
    def test_tables_are_kept_except_when_the_first_create_fails(self):
        for logical_id, table in loop_body("Tables").items():
            self.assertEqual(table["Type"], "AWS::DynamoDB::Table", logical_id)
            self.assertEqual(table["DeletionPolicy"], "RetainExceptOnCreate", logical_id)
            self.assertEqual(table["UpdateReplacePolicy"], "Retain", logical_id)

    def test_table_ids_follow_the_queue_name_not_its_position(self):
        self.assertEqual(list(loop_body("Tables")), ["Table&{QueueName}"])

    def test_the_schedule_has_no_fixed_name_and_a_dead_letter_queue(self):
        events = RESOURCES["PollerFunction"]["Properties"]["Events"]
        for name, event in events.items():
            if event["Type"] != "ScheduleV2":
                continue
            props = event["Properties"]
            self.assertIs(props.get("OmitName"), True, f"{name}: SAM would name it PollerFunction{name}")
            self.assertNotIn("Name", props, name)
            self.assertEqual(props["DeadLetterConfig"], {"Arn": {"Fn::GetAtt": ["ScheduleDeadLetters", "Arn"]}}, name)
            self.assertEqual(props["RoleArn"], {"Fn::GetAtt": ["SchedulerRole", "Arn"]}, name)

    def test_no_resource_has_a_fixed_physical_name(self):
        # Names that would collide between two stacks in one account and region. Table names
        # come from TablePrefix and the queue name, which the deployer chooses per stack.
        fixed = ("FunctionName", "RoleName", "QueueName", "AlarmName", "LogGroupName", "Name", "TopicName")
        for logical_id, resource in RESOURCES.items():
            if logical_id.startswith("Fn::ForEach::"):
                continue
            props = resource.get("Properties", {})
            for key in fixed:
                # A reference (RoleName: !Ref EnqueueRole) names another resource; a literal
                # string would be a physical name of this stack's own.
                self.assertNotIsInstance(props.get(key), str, f"{logical_id}.{key} is a fixed name")

    def test_reserved_concurrency_is_opt_in(self):
        param = TEMPLATE["Parameters"]["PollerReservedConcurrency"]
        self.assertEqual(param["Default"], 0)
        reserved = RESOURCES["PollerFunction"]["Properties"]["ReservedConcurrentExecutions"]
        condition, when_set, otherwise = reserved["Fn::If"]
        self.assertEqual(condition, "HasPollerReservedConcurrency")
        self.assertEqual(when_set, {"Ref": "PollerReservedConcurrency"})
        self.assertEqual(otherwise, {"Ref": "AWS::NoValue"})


    def test_metrics_survive_any_log_level(self):
        function = TEMPLATE["Globals"]["Function"]
        self.assertEqual(function["LoggingConfig"]["ApplicationLogLevel"], "TRACE")
        self.assertEqual(function["LoggingConfig"]["LogFormat"], "JSON")
        self.assertEqual(function["Environment"]["Variables"]["RUST_LOG"], {"Ref": "LogLevel"})


    def test_silence_alarms(self):
        alarms = {
            (r["Properties"]["Namespace"], r["Properties"]["MetricName"], r["Properties"]["Dimensions"][0]["Value"].get("Ref")): r["Properties"]
            for r in RESOURCES.values()
            if isinstance(r, dict) and r.get("Type") == "AWS::CloudWatch::Alarm"
        }
        heartbeat = alarms[("AWS/Lambda", "Invocations", "PollerFunction")]
        self.assertEqual(heartbeat["ComparisonOperator"], "LessThanThreshold")
        self.assertEqual(heartbeat["Threshold"], 1)
        self.assertEqual(heartbeat["Period"] * heartbeat["EvaluationPeriods"], 300)
        self.assertEqual(heartbeat["TreatMissingData"], "breaching", "no data means the poller is not running")
        for key in [
            ("AWS/Lambda", "Throttles", "PollerFunction"),
            ("AWS/Lambda", "Errors", "PollerFunction"),
            ("AWS/Lambda", "Errors", "EnqueueFunction"),
            ("SqsWaiter", "FailedEntries", "PollerFunction"),
            ("SqsWaiter", "PartitionErrors", "PollerFunction"),
            ("SqsWaiter", "BacklogAge", "PollerFunction"),
            ("SqsWaiter", "Parked", "PollerFunction"),
            ("AWS/SQS", "ApproximateNumberOfMessagesVisible", None),
        ]:
            self.assertIn(key, alarms)
        for props in alarms.values():
            self.assertIn("AlarmActions", props, "every alarm notifies AlarmTopicArn when given")



class LeastPrivilege(unittest.TestCase):
    def test_functions_use_our_roles_logging_only_to_their_own_log_groups(self):
        for fn, role, group in [
            ("EnqueueFunction", "EnqueueRole", "EnqueueLogGroup"),
            ("PollerFunction", "PollerRole", "PollerLogGroup"),
        ]:
            props = RESOURCES[fn]["Properties"]
            self.assertEqual(props["Role"], {"Fn::GetAtt": [role, "Arn"]}, "not SAM's role with AWSLambdaBasicExecutionRole")
            self.assertEqual(props["LoggingConfig"]["LogGroup"], {"Ref": group})
            self.assertEqual(RESOURCES[group]["Properties"]["RetentionInDays"], {"Ref": "LogRetentionDays"})
            role_props = RESOURCES[role]["Properties"]
            self.assertNotIn("ManagedPolicyArns", role_props)
            logs = [
                st
                for policy in role_props["Policies"]
                for st in policy["PolicyDocument"]["Statement"]
                if any(a.startswith("logs:") for a in st["Action"])
            ]
            self.assertEqual(len(logs), 1, role)
            self.assertEqual(logs[0]["Resource"], {"Fn::GetAtt": [group, "Arn"]}, role)

    def test_the_scheduler_role_is_for_this_account_only(self):
        trust = RESOURCES["SchedulerRole"]["Properties"]["AssumeRolePolicyDocument"]["Statement"]
        self.assertEqual(len(trust), 1)
        self.assertEqual(trust[0]["Principal"], {"Service": "scheduler.amazonaws.com"})
        self.assertEqual(trust[0]["Condition"], {"StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}})

    def test_kms_queue_keys_are_granted_exactly_when_given(self):
        self.assertEqual(TEMPLATE["Parameters"]["QueueKmsKeyArns"]["Default"], "")
        for name, role in [("QueueKeys", "EnqueueRole"), ("PollerQueueKeys", "PollerRole")]:
            policy = RESOURCES[name]
            self.assertEqual(policy["Condition"], "HasQueueKmsKeys")
            self.assertEqual(policy["Properties"]["RoleName"], {"Ref": role})
            (statement,) = policy["Properties"]["PolicyDocument"]["Statement"]
            self.assertEqual(sorted(statement["Action"]), ["kms:Decrypt", "kms:GenerateDataKey"])
            self.assertEqual(statement["Resource"], {"Ref": "QueueKmsKeyArns"})


if __name__ == "__main__":
    unittest.main(verbosity=2)
