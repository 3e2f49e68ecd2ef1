"""The stack's options of issue 48: the KMS keys of the queues and of the tables (item 3), each
granted exactly when given, the tables' key only through DynamoDB, and counted in the IAM
budget; X-Ray tracing (item 4); and issue 45's per-queue metrics switch. Run by scripts/template_test.sh with the project venv's
Python."""

import os
import re
import sys
import unittest
from unittest import mock

from cfnlint.decode import cfn_yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import check_params  # noqa: E402
import iam_budget  # noqa: E402

TEMPLATE = cfn_yaml.load(os.path.join(ROOT, "template.yaml"))
RESOURCES = TEMPLATE["Resources"]
KEY = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
ROLES = [{"Ref": "EnqueueRole"}, {"Ref": "PollerRole"}]


def table():
    _, _, body = RESOURCES["Fn::ForEach::Tables"]
    return body["Table&{QueueName}"]


class QueueKeys(unittest.TestCase):
    def test_kms_queue_keys_are_granted_exactly_when_given(self):
        self.assertEqual(TEMPLATE["Parameters"]["QueueKmsKeyArns"]["Default"], "")
        policy = RESOURCES["QueueKeys"]
        self.assertEqual(policy["Condition"], "HasQueueKmsKeys")
        self.assertEqual(policy["Properties"]["Roles"], ROLES)
        (statement,) = policy["Properties"]["PolicyDocument"]["Statement"]
        self.assertEqual(sorted(statement["Action"]), ["kms:Decrypt", "kms:GenerateDataKey"])
        self.assertEqual(statement["Resource"], {"Ref": "QueueKmsKeyArns"})


class TableKey(unittest.TestCase):
    def test_the_parameter_takes_a_key_arn_or_nothing_and_refuses_an_alias(self):
        param = TEMPLATE["Parameters"]["TableKmsKeyArn"]
        self.assertEqual(param["Default"], "")
        accepts = lambda v: re.fullmatch(param["AllowedPattern"], v) is not None  # noqa: E731
        self.assertTrue(accepts(""))
        self.assertTrue(accepts(KEY))
        self.assertTrue(accepts(KEY.replace("arn:aws:", "arn:aws-us-gov:").replace("us-east-1", "us-gov-west-1")))
        # IAM grants on the key's ARN: an alias would leave the roles without the key.
        self.assertFalse(accepts("alias/sqs-waiter"))
        self.assertFalse(accepts("arn:aws:kms:us-east-1:123456789012:alias/sqs-waiter"))
        self.assertFalse(accepts("1234abcd-12ab-34cd-56ef-1234567890ab"))

    def test_created_tables_use_the_key_when_given_and_the_aws_managed_key_otherwise(self):
        sse = table()["Properties"]["SSESpecification"]
        self.assertEqual(sse["SSEEnabled"], True)
        self.assertEqual(sse["SSEType"], {"Fn::If": ["HasTableKmsKey", "KMS", {"Ref": "AWS::NoValue"}]})
        self.assertEqual(sse["KMSMasterKeyId"],
                         {"Fn::If": ["HasTableKmsKey", {"Ref": "TableKmsKeyArn"}, {"Ref": "AWS::NoValue"}]})
        self.assertEqual(TEMPLATE["Conditions"]["HasTableKmsKey"],
                         {"Fn::Not": [{"Fn::Equals": [{"Ref": "TableKmsKeyArn"}, ""]}]})

    def test_both_roles_get_that_key_only_and_only_through_dynamodb(self):
        policy = RESOURCES["TableKey"]
        self.assertEqual(policy["Condition"], "HasTableKmsKey")
        self.assertEqual(policy["Properties"]["Roles"], ROLES)
        for role in ("EnqueueRole", "PollerRole"):
            with_key = dict(iam_budget.role_policies(["orders"], region="us-east-1", table_key=KEY)[role])
            without = dict(iam_budget.role_policies(["orders"])[role])
            self.assertNotIn("sqs-waiter-table-key", without)
            (statement,) = with_key["sqs-waiter-table-key"]["Statement"]
            self.assertEqual(statement["Resource"], KEY)
            self.assertEqual(statement["Condition"], {"StringEquals": {"kms:ViaService": "dynamodb.us-east-1.amazonaws.com"}})
            self.assertTrue(all(a.startswith("kms:") and a != "kms:*" for a in statement["Action"]))
            self.assertNotIn("kms:CreateGrant", statement["Action"], "the functions create no tables")
            # No other policy names the key.
            others = [d for n, d in with_key.items() if n != "sqs-waiter-table-key"]
            self.assertNotIn(KEY, repr(others))

    def test_the_budget_counts_the_key_policy(self):
        n = iam_budget.max_queues(80, "aws")
        queues = [f"{i:080d}" for i in range(n)]
        plain = iam_budget.role_chars(queues)
        grown = iam_budget.role_chars(queues, table_key=KEY)
        for role in grown:
            self.assertGreater(grown[role], plain[role] + len(KEY), role)
        # make deploy's check passes the key on: refused exactly when the roles with the key's
        # policy pass IAM's limit.
        for q in (n, n - 1, n - 2):
            chars = iam_budget.role_chars(queues[:q], table_key=KEY)
            fits = max(chars.values()) <= iam_budget.ROLE_INLINE_POLICY_CHARS
            self.assertEqual(iam_budget.problems(queues[:q], partition="aws", table_key=KEY) == [], fits, q)


class Environment(unittest.TestCase):
    """Lambda's 4 KB of environment: in SAM, IAM's inline budget binds first."""

    def test_at_sams_queue_limit_the_environment_fits_and_a_list_too_long_for_it_is_refused(self):
        longest_prefix = "p" * TEMPLATE["Parameters"]["TablePrefix"]["MaxLength"]
        for partition in iam_budget.PARTITIONS:
            n = iam_budget.max_queues(80, partition)
            queues = [f"{i:080d}" for i in range(n)]
            env = iam_budget.environment_bytes(queues, prefix=longest_prefix)
            print(f"{partition}: {n} queues of 80 characters, environment {env} bytes")
            self.assertLess(env, iam_budget.LAMBDA_ENVIRONMENT_BYTES, partition)
        # The check itself: a list the environment cannot hold is refused for that reason too.
        many = [f"{i:080d}" for i in range(50)]
        self.assertGreater(iam_budget.environment_bytes(many), iam_budget.LAMBDA_ENVIRONMENT_BYTES)
        found = iam_budget.problems(many, partition="aws")
        self.assertTrue(any("environment" in p and "over Lambda's 4096" in p for p in found), found)


class WarmThroughputNeverLowered(unittest.TestCase):
    """Issue 48 defect 5: an update that lowers warm throughput fails at DynamoDB."""

    def test_a_lower_value_than_the_stacks_is_refused_and_raising_or_keeping_it_is_not(self):
        current = {"WarmWriteUnits": "8000", "WarmReadUnits": "20000"}
        lowered = check_params.lowered
        self.assertEqual(lowered({"WarmWriteUnits": "8000"}, current), [])
        self.assertEqual(lowered({"WarmWriteUnits": "12000", "WarmReadUnits": "24000"}, current), [])
        self.assertEqual(lowered({}, current), [], "left out: UsePreviousValue")
        (write,) = lowered({"WarmWriteUnits": "4000"}, current)
        self.assertIn("WarmWriteUnits (4000) is below the stack's current 8000", write)
        (read,) = lowered({"WarmReadUnits": "12000"}, current)
        self.assertIn("WarmReadUnits (12000) is below the stack's current 20000", read)
        # 0 sets none (the tables keep theirs); a stack without warm throughput has nothing to lower.
        self.assertEqual(lowered({"WarmWriteUnits": "0", "WarmReadUnits": "12000"}, current), [])
        self.assertEqual(lowered({"WarmWriteUnits": "4000", "WarmReadUnits": "12000"},
                                 {"WarmWriteUnits": "0", "WarmReadUnits": "20000"}), [])
        self.assertEqual(lowered({"WarmWriteUnits": "4000"}, None), [], "a new stack")

    def test_make_deploy_refuses_it_before_sam_runs(self):
        import check_queues
        stack = ({"WarmWriteUnits": "8000", "WarmReadUnits": "12000", "IndexProjection": "INCLUDE"}, None)
        with mock.patch.object(check_params, "current_parameters", lambda stack_name, region=None: stack), \
                mock.patch.object(check_params, "current_template", lambda stack_name, region=None: (None, "offline")):
            argv = ["check_queues.py", "orders", "", "--region", "us-east-1", "--stack", "s"]
            self.assertEqual(check_queues.main(argv + ["--params", "WarmWriteUnits=4000"]), 2)
            self.assertEqual(check_queues.main(argv + ["--params", "WarmWriteUnits=8000"]), 0)


class Tracing(unittest.TestCase):
    def test_pass_through_by_default_and_active_on_both_functions_with_x_rays_writes(self):
        param = TEMPLATE["Parameters"]["Tracing"]
        self.assertEqual((param["Default"], param["AllowedValues"]), ("PassThrough", ["PassThrough", "Active"]))
        self.assertEqual(TEMPLATE["Globals"]["Function"]["Tracing"], {"Ref": "Tracing"})
        for fn in ("EnqueueFunction", "PollerFunction"):
            self.assertNotIn("Tracing", RESOURCES[fn]["Properties"], "the Globals' value applies")
        xray = {"Fn::Sub": "arn:${AWS::Partition}:iam::aws:policy/AWSXRayDaemonWriteAccess"}
        for role in ("EnqueueRole", "PollerRole"):
            self.assertEqual(RESOURCES[role]["Properties"]["ManagedPolicyArns"],
                             {"Fn::If": ["TracingActive", [xray], {"Ref": "AWS::NoValue"}]})
        self.assertEqual(TEMPLATE["Conditions"]["TracingActive"], {"Fn::Equals": [{"Ref": "Tracing"}, "Active"]})


class JobIdAttribute(unittest.TestCase):
    # Issue 82 (13): on by default, and then absent from the environment (4 KB, docs/deploy.md).
    def test_on_by_default_and_set_only_when_off(self):
        param = TEMPLATE["Parameters"]["JobIdAttribute"]
        self.assertEqual((param["Default"], param["AllowedValues"]), ("true", ["true", "false"]))
        env = TEMPLATE["Globals"]["Function"]["Environment"]["Variables"]
        self.assertEqual(env["WAITER_JOB_ID_ATTRIBUTE"],
                         {"Fn::If": ["JobIdAttributeOff", "false", {"Ref": "AWS::NoValue"}]})
        self.assertEqual(TEMPLATE["Conditions"]["JobIdAttributeOff"],
                         {"Fn::Equals": [{"Ref": "JobIdAttribute"}, "false"]})


class QueueMetrics(unittest.TestCase):
    # Issue 45, item 7: each queue's metrics are custom metrics billed by the month.
    def test_on_by_default_and_passed_to_both_functions(self):
        param = TEMPLATE["Parameters"]["QueueMetrics"]
        self.assertEqual((param["Default"], param["AllowedValues"]), ("true", ["true", "false"]))
        variables = TEMPLATE["Globals"]["Function"]["Environment"]["Variables"]
        self.assertEqual(variables["WAITER_QUEUE_METRICS"], {"Ref": "QueueMetrics"})
        for fn in ("EnqueueFunction", "PollerFunction"):
            own = RESOURCES[fn]["Properties"].get("Environment", {}).get("Variables", {})
            self.assertNotIn("WAITER_QUEUE_METRICS", own, "the Globals' value applies")



def codec_index_attributes():
    """INDEX_INCLUDED_ATTRIBUTES as the functions' codec names them (crates/waiter/src/aws/codec.rs)."""
    with open(os.path.join(ROOT, "crates", "waiter", "src", "aws", "codec.rs")) as f:
        source = f.read()
    names = re.search(r"pub const INDEX_INCLUDED_ATTRIBUTES: &\[&str\] = &\[([^\]]*)\];", source).group(1)
    constants = dict(re.findall(r'pub const (A_[A-Z_]+): &str = "([^"]+)";', source))
    return [constants[n.strip()] for n in names.split(",") if n.strip()]


class IndexProjection(unittest.TestCase):
    """Issue 45, 3: the created tables' index holds what the poller reads before its re-read."""

    def test_the_index_includes_what_the_codec_reads_by_default_and_all_on_request(self):
        param = TEMPLATE["Parameters"]["IndexProjection"]
        self.assertEqual(param["Default"], "INCLUDE")
        self.assertEqual(param["AllowedValues"], ["INCLUDE", "ALL"])
        self.assertEqual(TEMPLATE["Conditions"]["IndexProjectsAll"], {"Fn::Equals": [{"Ref": "IndexProjection"}, "ALL"]})
        (index,) = table()["Properties"]["GlobalSecondaryIndexes"]
        self.assertEqual(index["IndexName"], "scheduler-perform_at-index")
        self.assertEqual(codec_index_attributes(), ["priority", "weight"])
        self.assertEqual(index["Projection"], {"Fn::If": [
            "IndexProjectsAll",
            {"ProjectionType": "ALL"},
            {"ProjectionType": "INCLUDE", "NonKeyAttributes": codec_index_attributes()},
        ]})

    def test_make_deploy_refuses_a_change_of_projection_on_an_existing_stack(self):
        changed = check_params.projection_changed
        self.assertEqual(changed({}, None), [], "a new stack chooses")
        self.assertEqual(changed({"IndexProjection": "ALL"}, {}), [], "a new stack chooses")
        # A stack from before the parameter: its tables project ALL, and the default is INCLUDE.
        (before,) = changed({}, {"Shards": "4"})
        self.assertIn("IndexProjection (INCLUDE) differs from the projection of this stack's tables' index (ALL)", before)
        self.assertEqual(changed({"IndexProjection": "ALL"}, {"Shards": "4"}), [])
        self.assertEqual(changed({}, {"IndexProjection": "INCLUDE"}), [], "left out: UsePreviousValue")
        (switched,) = changed({"IndexProjection": "ALL"}, {"IndexProjection": "INCLUDE"})
        self.assertIn("deploy with IndexProjection=INCLUDE", switched)
        import check_queues
        stack = ({"Shards": "4"}, None)
        with mock.patch.object(check_params, "current_parameters", lambda stack_name, region=None: stack), \
                mock.patch.object(check_params, "current_template", lambda stack_name, region=None: (None, "offline")):
            argv = ["check_queues.py", "orders", "", "--region", "us-east-1", "--stack", "s"]
            self.assertEqual(check_queues.main(argv + ["--params", ""]), 2)
            self.assertEqual(check_queues.main(argv + ["--params", "IndexProjection=ALL"]), 0)

class Autoscaling(unittest.TestCase):
    """Issue 45, 6: provisioned capacity with autoscaling of each created table and its index."""

    def test_parameters_are_off_by_default_and_bounded_as_dynamodb_bounds_them(self):
        params = TEMPLATE["Parameters"]
        for name in ("MaxReadCapacity", "MaxWriteCapacity"):
            self.assertEqual((params[name]["Default"], params[name]["MinValue"], params[name]["MaxValue"]), (0, 0, 40000))
        target = params["TargetUtilization"]
        self.assertEqual((target["Default"], target["MinValue"], target["MaxValue"]), (70, 20, 90))
        for kind in ("Reads", "Writes"):
            condition = TEMPLATE["Conditions"][f"Scales{kind}"]["Fn::And"]
            self.assertEqual(condition[:2], [{"Condition": "Provisioned"}, {"Condition": "HasCreatedTables"}])
            self.assertEqual(condition[2], {"Fn::Not": [{"Fn::Equals": [{"Ref": f"Max{kind[:-1]}Capacity"}, 0]}]})

    def test_table_and_index_each_get_a_target_and_a_tracking_policy_per_dimension(self):
        _, over, body = RESOURCES["Fn::ForEach::TableScaling"]
        self.assertEqual(over, {"Ref": "QueueNames"}, "the created tables only")
        self.assertEqual(len(body), 8)
        for kind, path in (("Table", ""), ("Index", "/index/scheduler-perform_at-index")):
            for dim in ("Read", "Write"):
                target = body[f"{kind}{dim}Scaling&{{QueueName}}"]
                policy = body[f"{kind}{dim}Tracking&{{QueueName}}"]
                where = {"ServiceNamespace": "dynamodb",
                         "ScalableDimension": f"dynamodb:{kind.lower()}:{dim}CapacityUnits",
                         # The table's Ref (its name), whichever TableScope named it.
                         "ResourceId": {"Fn::Sub": f"table/${{Table&{{QueueName}}}}{path}"}}
                self.assertEqual(target["Type"], "AWS::ApplicationAutoScaling::ScalableTarget")
                self.assertEqual(target["Condition"], f"Scales{dim}s")
                self.assertEqual(target["DependsOn"], "Table&{QueueName}")
                self.assertEqual({k: target["Properties"][k] for k in where}, where)
                self.assertEqual(target["Properties"]["MinCapacity"], {"Ref": f"{dim}Capacity"})
                self.assertEqual(target["Properties"]["MaxCapacity"], {"Ref": f"Max{dim}Capacity"})
                self.assertEqual(policy["Condition"], f"Scales{dim}s")
                self.assertEqual(policy["DependsOn"], f"{kind}{dim}Scaling&{{QueueName}}")
                self.assertEqual({k: policy["Properties"][k] for k in where}, where, "the same target")
                tracking = policy["Properties"]["TargetTrackingScalingPolicyConfiguration"]
                self.assertEqual(tracking["TargetValue"], {"Ref": "TargetUtilization"})
                self.assertEqual(tracking["PredefinedMetricSpecification"],
                                 {"PredefinedMetricType": f"DynamoDB{dim}CapacityUtilization"})

    def test_make_deploy_refuses_a_maximum_on_demand_or_below_the_minimum(self):
        values = {"PollerTimeout": "70", "FifoHold": "0", "PollerGroups": "1", "PollerReservedConcurrency": "0",
                  "BillingMode": "PROVISIONED", "ReadCapacity": "5", "WriteCapacity": "5",
                  "MaxReadCapacity": "100", "MaxWriteCapacity": "0"}
        self.assertEqual(check_params.problems(values), [])
        (low,) = check_params.problems({**values, "MaxReadCapacity": "4"})
        self.assertIn("MaxReadCapacity (4) must be at least ReadCapacity (5)", low)
        (on_demand,) = check_params.problems({**values, "BillingMode": "PAY_PER_REQUEST"})
        self.assertIn("MaxReadCapacity (100) needs BillingMode PROVISIONED", on_demand)
        self.assertEqual(check_params.problems({**values, "BillingMode": "PAY_PER_REQUEST", "MaxReadCapacity": "0"}), [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
