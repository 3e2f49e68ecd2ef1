"""Structural assertions on template.yaml that cfn-lint cannot make: what a first and a second
real deploy need (issue 12). Run by scripts/template_test.sh with the project venv's Python,
which has cfn-lint (for its CloudFormation-aware YAML loader)."""

import json
import os
import re
import unittest

from cfnlint.decode import cfn_yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TEMPLATE = cfn_yaml.load(os.path.join(ROOT, "template.yaml"))
RESOURCES = TEMPLATE["Resources"]


def read(*path):
    with open(os.path.join(ROOT, *path)) as f:
        return f.read()


def loop_body(name):
    """The resources of a `Fn::ForEach::<name>` loop: {logical-id pattern: resource}."""
    _, _, body = RESOURCES[f"Fn::ForEach::{name}"]
    return body


def loop_collection(name):
    _, collection, _ = RESOURCES[f"Fn::ForEach::{name}"]
    return collection


class FirstAndSecondDeploy(unittest.TestCase):
    def test_tables_are_kept_on_delete_replacement_and_removal(self):
        for logical_id, table in loop_body("Tables").items():
            self.assertEqual(table["Type"], "AWS::DynamoDB::Table", logical_id)
            self.assertEqual(table["DeletionPolicy"], "Retain", logical_id)
            self.assertEqual(table["UpdateReplacePolicy"], "Retain", logical_id)

    def test_no_policy_that_aws_language_extensions_refuses(self):
        # AWS::LanguageExtensions fails with "Unrecognized DeletionPolicy RetainExceptOnCreate"
        # (aws-cloudformation/cfn-language-discussion#139); SAM CLI and the rehearsal expand the
        # loops themselves and would not notice.
        self.assertIn("AWS::LanguageExtensions", TEMPLATE["Transform"])
        text = open(os.path.join(ROOT, "template.yaml")).read()
        self.assertNotRegex(text, r"(DeletionPolicy|UpdateReplacePolicy): *RetainExceptOnCreate")

    def test_only_queue_names_get_tables_and_adopted_queues_get_the_same_access(self):
        self.assertEqual(loop_collection("Tables"), {"Ref": "QueueNames"})
        self.assertEqual(loop_body("Tables")["Table&{QueueName}"]["Condition"], "HasCreatedTables")
        self.assertEqual(TEMPLATE["Parameters"]["AdoptedQueueNames"]["Default"], "")
        self.assertEqual(loop_collection("QueueAccess"), {"Ref": "QueueNames"})
        self.assertEqual(loop_collection("AdoptedQueueAccess"), {"Ref": "AdoptedQueueNames"})
        created, adopted = loop_body("QueueAccess"), loop_body("AdoptedQueueAccess")
        # Two patterns: with both lists empty (their defaults, as a plain `sam validate` reads
        # them) one pattern would expand to the same id twice.
        self.assertEqual((list(created), list(adopted)), (["Send&{QueueName}"], ["SendAdopted&{QueueName}"]))
        for (cid, c), (_, a) in zip(created.items(), adopted.items()):
            self.assertEqual(c["Properties"], a["Properties"], cid)
            self.assertEqual((c["Condition"], a["Condition"]), ("HasCreatedTables", "HasAdoptedTables"))
        env = TEMPLATE["Globals"]["Function"]["Environment"]["Variables"]
        created_list, adopted_list = ({"Fn::Join": [",", {"Ref": n}]} for n in ("QueueNames", "AdoptedQueueNames"))
        self.assertEqual(env["WAITER_QUEUES"], {"Fn::If": [
            "HasAdoptedTables",
            {"Fn::If": ["HasCreatedTables", {"Fn::Join": [",", [created_list, adopted_list]]}, adopted_list]},
            created_list]})

    def test_tables_have_point_in_time_recovery_and_a_ttl_for_history(self):
        # Also rehearsed on LocalStack, which ignores point-in-time recovery (tests/rehearsal).
        for logical_id, table in loop_body("Tables").items():
            props = table["Properties"]
            self.assertEqual(props["PointInTimeRecoverySpecification"], {"PointInTimeRecoveryEnabled": True}, logical_id)
            self.assertEqual(props["TimeToLiveSpecification"], {"AttributeName": "purge_at", "Enabled": True}, logical_id)

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
            if isinstance(r, dict) and r.get("Type") == "AWS::CloudWatch::Alarm" and "Metrics" not in r["Properties"]
        }
        heartbeat = alarms[("AWS/Lambda", "Invocations", "PollerFunction")]
        self.assertEqual(heartbeat["ComparisonOperator"], "LessThanThreshold")
        self.assertEqual(heartbeat["Threshold"], 1)
        self.assertEqual(heartbeat["Period"] * heartbeat["EvaluationPeriods"], 300)
        self.assertEqual(heartbeat["TreatMissingData"], "breaching", "no data means the poller is not running")
        for key in [
            ("AWS/Lambda", "Throttles", "PollerFunction"),
            ("AWS/Lambda", "Errors", "PollerFunction"),
            ("SqsWaiter", "FailedEntries", "PollerFunction"),
            ("SqsWaiter", "PartitionErrors", "PollerFunction"),
            ("SqsWaiter", "BacklogAge", "PollerFunction"),
            ("SqsWaiter", "Parked", "PollerFunction"),
            ("AWS/SQS", "NumberOfMessagesSent", None),
        ]:
            self.assertIn(key, alarms)
        # Failure queues alarm on arrivals, so the alarm clears while the messages stay kept.
        for r in RESOURCES.values():
            if isinstance(r, dict) and r.get("Type") == "AWS::CloudWatch::Alarm":
                self.assertNotEqual(r["Properties"].get("MetricName"), "ApproximateNumberOfMessagesVisible")

    def test_the_functions_wait_for_their_table_rights(self):
        # Issue 24, 2h: a first run before its policy exists would fail and be kept as a failure.
        self.assertEqual(RESOURCES["EnqueueFunction"]["DependsOn"], ["EnqueueTables"])
        self.assertEqual(RESOURCES["PollerFunction"]["DependsOn"], ["PollerTables"])
        for r in RESOURCES.values():
            if isinstance(r, dict) and r.get("Type") == "AWS::CloudWatch::Alarm":
                self.assertIn("AlarmActions", r["Properties"], "every alarm notifies AlarmTopicArn when given")

    def test_the_enqueue_alarm_leaves_out_refused_requests(self):
        # A refused request is a Lambda error by contract; one must not page (issue 24, 2d).
        props = RESOURCES["EnqueueErrorsAlarm"]["Properties"]
        metrics = {m["Id"]: m for m in props["Metrics"]}
        stat = {i: (m["MetricStat"]["Metric"]["Namespace"], m["MetricStat"]["Metric"]["MetricName"],
                    m["MetricStat"]["Metric"]["Dimensions"], m["MetricStat"]["Stat"])
                for i, m in metrics.items() if "MetricStat" in m}
        fn = [{"Name": "FunctionName", "Value": {"Ref": "EnqueueFunction"}}]
        self.assertEqual(stat, {"errors": ("AWS/Lambda", "Errors", fn, "Sum"),
                                "refused": ("SqsWaiter", "Refused", fn, "Sum"),
                                "failures": ("SqsWaiter", "Failures", fn, "Sum")})
        returned = [m for m in props["Metrics"] if m.get("ReturnData", True)]
        self.assertEqual([m["Expression"] for m in returned], ["FILL(errors, 0) - FILL(refused, 0) + FILL(failures, 0)"])
        self.assertEqual((props["Threshold"], props["ComparisonOperator"]), (1, "GreaterThanOrEqualToThreshold"))



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

    def test_the_table_prefix_may_not_be_empty(self):
        # Table rights are by table/{TablePrefix}*: empty would be table/*, every table.
        pattern = TEMPLATE["Parameters"]["TablePrefix"]["AllowedPattern"]
        self.assertIsNone(re.fullmatch(pattern, ""))
        self.assertIsNotNone(re.fullmatch(pattern, "sqs-waiter-"))
        self.assertIsNone(re.fullmatch(pattern, "a b"))

    def test_kms_queue_keys_are_granted_exactly_when_given(self):
        self.assertEqual(TEMPLATE["Parameters"]["QueueKmsKeyArns"]["Default"], "")
        policy = RESOURCES["QueueKeys"]
        self.assertEqual(policy["Condition"], "HasQueueKmsKeys")
        self.assertEqual(policy["Properties"]["Roles"], [{"Ref": "EnqueueRole"}, {"Ref": "PollerRole"}])
        (statement,) = policy["Properties"]["PolicyDocument"]["Statement"]
        self.assertEqual(sorted(statement["Action"]), ["kms:Decrypt", "kms:GenerateDataKey"])
        self.assertEqual(statement["Resource"], {"Ref": "QueueKmsKeyArns"})



# IAM's aggregate inline policy size per role, without whitespace:
# https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_iam-quotas.html
ROLE_INLINE_POLICY_CHARS = 10_240


def resolve(value, names):
    """Evaluates the few intrinsics the IAM policies use, with long but realistic values."""
    if isinstance(value, list):
        return [resolve(v, names) for v in value]
    if not isinstance(value, dict):
        return value
    if "Fn::Sub" in value:
        return re.sub(r"\$\{([^}]+)\}", lambda m: names[m.group(1)], value["Fn::Sub"])
    if "Ref" in value:
        return names[value["Ref"]]
    if "Fn::GetAtt" in value:
        return "x" * 150  # a log group or queue ARN with a generated name
    return {k: resolve(v, names) for k, v in value.items()}


def inline_policy_chars(role, queues, adopted=()):
    """The role's inline policy characters once the template is deployed with `queues` (and
    `adopted` queues, whose tables exist)."""
    lists = {"QueueNames": list(queues), "AdoptedQueueNames": list(adopted)}
    names = {"AWS::Partition": "aws", "AWS::Region": "ap-southeast-2", "AWS::AccountId": "123456789012",
             "TablePrefix": "sqs-waiter-"}
    docs = [p["PolicyDocument"] for p in RESOURCES[role]["Properties"].get("Policies", [])]
    for logical_id, resource in RESOURCES.items():
        if logical_id.startswith("Fn::ForEach::"):
            name = logical_id.split("::")[2]
            bodies = [(body, q) for q in lists[loop_collection(name)["Ref"]] for body in loop_body(name).values()]
        elif resource.get("Condition"):
            continue  # optional extras (QueueKmsKeyArns) are not counted
        else:
            bodies = [(resource, None)]
        for body, queue in bodies:
            props = body.get("Properties", {})
            roles = [props["RoleName"]] if body.get("Type") == "AWS::IAM::RolePolicy" else props.get("Roles", [])
            if body.get("Type") in ("AWS::IAM::RolePolicy", "AWS::IAM::Policy") and {"Ref": role} in roles:
                docs.append(resolve(body["Properties"]["PolicyDocument"], {**names, "QueueName": queue or ""}))
    return sum(len(json.dumps(resolve(d, names), separators=(",", ":"))) for d in docs)


class ScaleOfQueues(unittest.TestCase):
    def test_fifty_queues_fit_the_inline_policy_limit_of_each_role(self):
        queues = [f"queue-with-a-forty-character-name-{i:06}" for i in range(50)]
        self.assertEqual({len(q) for q in queues}, {40})
        for role in ["EnqueueRole", "PollerRole"]:
            chars = inline_policy_chars(role, queues)
            print(f"{role}: {chars} inline policy characters for 50 queues of 40 characters")
            self.assertLess(chars, ROLE_INLINE_POLICY_CHARS, role)

    def test_tables_are_granted_by_the_stack_prefix_and_queues_by_name(self):
        for role in ["EnqueueRole", "PollerRole"]:
            one = inline_policy_chars(role, ["q" * 40])
            two = inline_policy_chars(role, ["q" * 40, "r" * 40])
            # Each further queue costs only its send policy, not its table's statements.
            self.assertLess(two - one, 200, role)

    def test_an_adopted_queue_costs_what_a_created_one_does(self):
        for role in ["EnqueueRole", "PollerRole"]:
            self.assertEqual(inline_policy_chars(role, ["q" * 40], ["r" * 40]),
                             inline_policy_chars(role, ["q" * 40, "r" * 40]), role)


class OperatorDashboard(unittest.TestCase):
    """Issue 24, 4: one dashboard body for SAM and CDK (infra/lib/dashboard.json), graphing
    metrics the functions emit, drawn in docs/dashboard.svg."""

    import importlib.util as _util
    _spec = _util.spec_from_file_location("render_dashboard", os.path.join(ROOT, "scripts", "render_dashboard.py"))
    render = _util.module_from_spec(_spec)
    _spec.loader.exec_module(render)

    def test_the_template_deploys_the_shared_body_and_lets_it_be_left_out(self):
        dashboard = RESOURCES["OperatorDashboard"]
        self.assertEqual(dashboard["Condition"], "HasDashboard")
        self.assertEqual(TEMPLATE["Conditions"]["HasDashboard"], {"Fn::Equals": [{"Ref": "Dashboard"}, "true"]})
        self.assertEqual(TEMPLATE["Parameters"]["Dashboard"]["Default"], "true")
        shared = read("infra", "lib", "dashboard.json")
        self.assertEqual(dashboard["Properties"]["DashboardBody"]["Fn::Sub"].strip(), shared.strip())
        # Every substitution is one the template resolves.
        names = set(re.findall(r"\$\{([^!}][^}]*)\}", shared))
        self.assertEqual(names, {"AWS::Region", "PollerFunction", "EnqueueFunction", "PollerTimeout"})
        for name in names - {"AWS::Region"}:
            self.assertTrue(name in RESOURCES or name in TEMPLATE["Parameters"], name)

    def test_it_graphs_per_queue_what_the_issue_asks_with_metrics_the_functions_emit(self):
        body = self.render.body()
        text = json.dumps(body)
        for metric, stat in [("Dispatched", "Sum"), ("Lateness", "p50"), ("Lateness", "p99"),
                             ("Parked", "Sum"), ("Expired", "Sum"), ("FailedEntries", "Sum")]:
            self.assertRegex(text, r"SEARCH\('\{SqsWaiter,FunctionName,Queue\} MetricName=\\\"%s\\\" "
                                   r"FunctionName=\\\"sqs-waiter-PollerFunction\\\"', '%s'" % (metric, stat))
        self.assertIn("{SqsWaiter,FunctionName,ErrorType} MetricName=\\\"Errors\\\"", text)
        duration = next(w["properties"] for w in body["widgets"] if "duration" in w["properties"]["title"])
        self.assertEqual(duration["annotations"]["horizontal"][0]["value"], 70, "the poller's timeout, in seconds")
        self.assertIn(["AWS/Lambda", "Invocations", "FunctionName", "sqs-waiter-EnqueueFunction",
                       {"id": "requests", "label": "requests"}], next(
            w["properties"]["metrics"] for w in body["widgets"] if "Enqueue" in w["properties"]["title"]))
        # The names the graphs search for are the ones the functions print (metrics.rs).
        emitted = read("crates", "waiter", "src", "metrics.rs")
        for name in ["Dispatched", "Lateness", "Parked", "Expired", "FailedEntries", "Errors", "Retried",
                     "Exhausted", "BacklogAge"]:
            self.assertIn(f'"{name}"', emitted, name)
        for dim in ['QUEUE_DIMENSION: &str = "Queue"', 'ERROR_TYPE_DIMENSION: &str = "ErrorType"']:
            self.assertIn(dim, emitted)
        # Widgets fit CloudWatch's 24-column grid without overlapping.
        cells = set()
        for w in body["widgets"]:
            self.assertLessEqual(w["x"] + w["width"], 24)
            for cx in range(w["x"], w["x"] + w["width"]):
                for cy in range(w["y"], w["y"] + w["height"]):
                    self.assertNotIn((cx, cy), cells, w["properties"]["title"])
                    cells.add((cx, cy))

    def test_the_committed_picture_is_the_bodys(self):
        drawn = read("docs", "dashboard.svg")
        self.assertEqual(drawn, self.render.svg(self.render.body()),
                         "docs/dashboard.svg is stale: run python3 scripts/render_dashboard.py")


if __name__ == "__main__":
    unittest.main(verbosity=2)
