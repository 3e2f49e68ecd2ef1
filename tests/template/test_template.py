"""Structural assertions on template.yaml that cfn-lint cannot make: what a first and a second
real deploy need (issue 12). Run by scripts/template_test.sh with the project venv's Python,
which has cfn-lint (for its CloudFormation-aware YAML loader)."""

import json
import os
import re
import unittest

import sys

from cfnlint.decode import cfn_yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import check_params  # noqa: E402
import check_queues  # noqa: E402
import iam_budget  # noqa: E402
TEMPLATE = cfn_yaml.load(os.path.join(ROOT, "template.yaml"))
RESOURCES = TEMPLATE["Resources"]


def read(*path):
    with open(os.path.join(ROOT, *path)) as f:
        return f.read()


def loop_body(name):
    """The resources of a `Fn::ForEach::<name>` loop: {logical-id pattern: resource}."""
    _, _, body = RESOURCES[f"Fn::ForEach::{name}"]
    return body


def parameter_accepts(param, value):
    """Whether CloudFormation takes `value` (as given on the command line) for a Number
    parameter: a number, within MinValue and MaxValue, and one of AllowedValues if listed; for
    a String one, the whole value matches AllowedPattern, and is one of AllowedValues if listed."""
    if param["Type"] == "String":
        pattern = param.get("AllowedPattern")
        return (pattern is None or re.fullmatch(pattern, value) is not None) \
            and ("AllowedValues" not in param or value in param["AllowedValues"])
    try:
        number = float(value)
    except ValueError:
        return False
    if "MinValue" in param and number < float(param["MinValue"]):
        return False
    if "MaxValue" in param and number > float(param["MaxValue"]):
        return False
    return "AllowedValues" not in param or value in [str(v) for v in param["AllowedValues"]]


def loop_collection(name):
    _, collection, _ = RESOURCES[f"Fn::ForEach::{name}"]
    return collection


class Releases(unittest.TestCase):
    def test_the_template_outputs_the_workspaces_version_and_updates_the_poller_first(self):
        cargo = read("Cargo.toml")
        version = re.search(r'\[workspace\.package\]\s*\nversion = "([^"]+)"', cargo).group(1)
        self.assertEqual(TEMPLATE["Outputs"]["Version"]["Value"], version)
        # CloudFormation updates what a resource depends on first: the poller before enqueue.
        self.assertEqual(RESOURCES["EnqueueFunction"].get("DependsOn"), "PollerFunction")
        self.assertNotIn("EnqueueFunction", json.dumps(RESOURCES["PollerFunction"]))


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
        self.assertEqual(loop_collection("CreatedQueueAccess"), {"Ref": "QueueNames"})
        self.assertEqual(loop_collection("AdoptedQueueAccess"), {"Ref": "AdoptedQueueNames"})
        created, adopted = loop_body("CreatedQueueAccess"), loop_body("AdoptedQueueAccess")
        # Ids of one length that differ in their first letters after the role: no created
        # queue's id can be an adopted queue's (issue 37, defect 3).
        self.assertEqual((list(created), list(adopted)),
                         (["EnqueueCreated&{QueueName}", "PollerCreated&{QueueName}"],
                          ["EnqueueAdopted&{QueueName}", "PollerAdopted&{QueueName}"]))
        for (cid, c), (aid, a) in zip(created.items(), adopted.items()):
            self.assertEqual(c["Properties"]["PolicyDocument"], a["Properties"]["PolicyDocument"], cid)
            self.assertEqual(c["Properties"]["Roles"], a["Properties"]["Roles"], cid)
            # On with TableScope=prefix only; with stack the stack policies hold every queue.
            self.assertEqual((c["Condition"], a["Condition"]), ("GrantsCreatedTables", "GrantsAdoptedTables"))
            for cond, has in (("GrantsCreatedTables", "HasCreatedTables"), ("GrantsAdoptedTables", "HasAdoptedTables")):
                self.assertEqual(TEMPLATE["Conditions"][cond],
                                 {"Fn::And": [{"Condition": has}, {"Fn::Not": [{"Condition": "StackScoped"}]}]})
            # Policy names differ by list: a queue moved from one list to the other in one
            # update keeps its rights, whichever policy CloudFormation writes or deletes first
            # (issue 37, defect 2).
            self.assertEqual((c["Properties"]["PolicyName"], a["Properties"]["PolicyName"]),
                             ({"Fn::Sub": "created-${QueueName}"}, {"Fn::Sub": "adopted-${QueueName}"}), cid)
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

    def test_each_poller_group_has_a_schedule_with_no_fixed_name_and_a_dead_letter_queue(self):
        self.assertNotIn("Events", RESOURCES["PollerFunction"]["Properties"], "schedules are PollerSchedules")
        body = loop_body("PollerSchedules")
        self.assertEqual(list(body), ["PollerSchedule${Group}"])
        schedule = body["PollerSchedule${Group}"]
        props = schedule["Properties"]
        self.assertNotIn("Name", props, "a fixed name would collide between two stacks")
        self.assertEqual(props["ScheduleExpression"], "rate(1 minute)")
        target = props["Target"]
        self.assertEqual(target["Arn"], {"Fn::GetAtt": ["PollerFunction", "Arn"]})
        self.assertEqual(target["RoleArn"], {"Fn::GetAtt": ["SchedulerRole", "Arn"]})
        self.assertEqual(target["DeadLetterConfig"], {"Arn": {"Fn::GetAtt": ["ScheduleDeadLetters", "Arn"]}})
        self.assertEqual(target["RetryPolicy"], {"MaximumRetryAttempts": 0})
        # The input is the poller's group event, for every group of every PollerGroups value.
        template = target["Input"]["Fn::Sub"]
        for n in range(1, 17):
            for i in range(n):
                event = json.loads(template.replace("${Group}", str(i)).replace("${PollerGroups}", str(n)))
                self.assertEqual(event, {"group": i, "groups": n})

    def test_no_loop_body_names_its_condition_with_the_loop_identifier(self):
        # Issue 48, defect 1: `Condition: "PollerGroupOn${Group}"` relied on the transform
        # substituting a plain string outside the output key, which AWS does not document (its
        # RFC makes only the output key an implicit Fn::Sub); the schedules' loop now runs over
        # a mapped list instead, and no loop body carries a Condition that needs the identifier.
        for key, (name, _, body) in ((k, v) for k, v in RESOURCES.items() if k.startswith("Fn::ForEach::")):
            for pattern, resource in body.items():
                condition = resource.get("Condition")
                self.assertFalse(isinstance(condition, str) and ("${" + name + "}") in condition, f"{key}: {pattern}")
                self.assertNotIsInstance(condition, dict, f"{key}: {pattern}: SAM CLI cannot expand a computed Condition")
        self.assertFalse([c for c in TEMPLATE.get("Conditions", {}) if c.startswith("PollerGroupOn")])
        self.assertNotIn("Metadata", TEMPLATE, "no cfn-lint check silenced for the schedules' loop")

    def test_poller_groups_run_exactly_the_groups_below_their_number(self):
        collection = loop_collection("PollerSchedules")
        self.assertEqual(collection, {"Fn::FindInMap": ["PollerGroupIds", {"Ref": "PollerGroups"}, "Groups"]})
        params = TEMPLATE["Parameters"]["PollerGroups"]
        # CloudFormation takes a Number parameter's 1.5 or 2.0 within MinValue/MaxValue; a
        # String with AllowedValues takes exactly the values listed, each a key of the mapping.
        for odd in ("1.5", "2.0", "0", "17", "-1", "02", " 2"):
            self.assertFalse(parameter_accepts(params, odd), f"PollerGroups={odd} accepted")
        accepted = [n for n in range(0, 40) if parameter_accepts(params, str(n))]
        self.assertEqual(accepted, list(range(1, 17)))
        mapping = TEMPLATE["Mappings"]["PollerGroupIds"]
        self.assertEqual(sorted(mapping, key=int), [str(n) for n in accepted])
        loop = {"Fn::ForEach::PollerSchedules": RESOURCES["Fn::ForEach::PollerSchedules"]}
        for n in accepted:
            expanded = iam_budget.expand_loops(loop, {}, TEMPLATE["Mappings"], {"PollerGroups": str(n)})
            self.assertEqual(sorted(expanded), sorted(f"PollerSchedule{i}" for i in range(n)), f"PollerGroups={n}")
            self.assertTrue(all("Condition" not in r for r in expanded.values()))
        with self.assertRaises(ValueError):
            iam_budget.expand_loops(loop, {}, TEMPLATE["Mappings"], {"PollerGroups": "17"})
        env = TEMPLATE["Globals"]["Function"]["Environment"]["Variables"]
        self.assertEqual(env["WAITER_POLLER_GROUPS"], {"Ref": "PollerGroups"})

    def test_warm_throughput_is_set_on_table_and_index_only_when_asked(self):
        for logical_id, table in loop_body("Tables").items():
            props = table["Properties"]
            warm = {"Fn::If": ["HasWarmThroughput",
                               {"ReadUnitsPerSecond": {"Ref": "WarmReadUnits"},
                                "WriteUnitsPerSecond": {"Ref": "WarmWriteUnits"}},
                               {"Ref": "AWS::NoValue"}]}
            self.assertEqual(props["WarmThroughput"], warm, logical_id)
            (index,) = props["GlobalSecondaryIndexes"]
            self.assertEqual(index["WarmThroughput"], warm, logical_id)
        self.assertEqual(TEMPLATE["Conditions"]["HasWarmThroughput"],
                         {"Fn::Not": [{"Fn::Equals": [{"Ref": "WarmWriteUnits"}, "0"]}]})

    def test_warm_throughput_takes_only_what_dynamodb_accepts(self):
        # Issue 48 defect 5: DynamoDB refuses warm write units below a new table's own (4000)
        # and above the table quota (40000 by default).
        writes = TEMPLATE["Parameters"]["WarmWriteUnits"]
        for ok in ("0", "4000", "9999", "10000", "39999", "40000"):
            self.assertTrue(parameter_accepts(writes, ok), ok)
        for bad in ("1", "3999", "40001", "100000", "4000.5", "04000", "-4000", "", "4e3"):
            self.assertFalse(parameter_accepts(writes, bad), bad)
        reads = TEMPLATE["Parameters"]["WarmReadUnits"]
        self.assertEqual([v for v in ("11999", "12000", "40000", "40001") if parameter_accepts(reads, v)],
                         ["12000", "40000"])

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
            ("SqsWaiter", "Unreadable", "PollerFunction"),
            ("SqsWaiter", "BacklogAge", "PollerFunction"),
            ("SqsWaiter", "Parked", "PollerFunction"),
            ("AWS/SQS", "NumberOfMessagesSent", None),
        ]:
            self.assertIn(key, alarms)
        # Failure queues alarm on arrivals, so the alarm clears while the messages stay kept.
        for r in RESOURCES.values():
            if isinstance(r, dict) and r.get("Type") == "AWS::CloudWatch::Alarm":
                self.assertNotEqual(r["Properties"].get("MetricName"), "ApproximateNumberOfMessagesVisible")

    def test_every_alarm_notifies_the_alarm_topic(self):
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
            # Nothing managed but X-Ray's writes with Tracing=Active (tests/template/test_options.py).
            self.assertEqual(role_props.get("ManagedPolicyArns", {}).get("Fn::If", [None])[0], "TracingActive")
            logs = [
                st
                for policy in role_props["Policies"]
                for st in policy["PolicyDocument"]["Statement"]
                if any(a.startswith("logs:") for a in st["Action"])
            ]
            self.assertEqual(len(logs), 1, role)
            self.assertEqual(logs[0]["Resource"], {"Fn::GetAtt": [group, "Arn"]}, role)

    def test_the_scheduler_role_is_for_this_stacks_schedules_only(self):
        trust = RESOURCES["SchedulerRole"]["Properties"]["AssumeRolePolicyDocument"]["Statement"]
        self.assertEqual(len(trust), 1)
        self.assertEqual(trust[0]["Principal"], {"Service": "scheduler.amazonaws.com"})
        # The scheduler gives the schedule group's ARN as aws:SourceArn: the stack's own group.
        self.assertEqual(trust[0]["Condition"], {
            "StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}},
            "ArnEquals": {"aws:SourceArn": {"Fn::GetAtt": ["PollerScheduleGroup", "Arn"]}},
        })
        group = RESOURCES["PollerScheduleGroup"]
        self.assertEqual(group["Type"], "AWS::Scheduler::ScheduleGroup")
        self.assertNotIn("Name", group.get("Properties", {}), "a fixed name would collide between two stacks")
        schedule = loop_body("PollerSchedules")["PollerSchedule${Group}"]
        self.assertEqual(schedule["Properties"]["GroupName"], {"Ref": "PollerScheduleGroup"})

    def test_the_table_prefix_leaves_room_for_any_queue_name(self):
        # Table rights are by exact ARN, so an empty prefix grants no other table; a prefix and
        # an 80-character queue name fit DynamoDB's 255 characters (issue 37, defect 5).
        param = TEMPLATE["Parameters"]["TablePrefix"]
        self.assertIsNotNone(re.fullmatch(param["AllowedPattern"], ""))
        self.assertIsNotNone(re.fullmatch(param["AllowedPattern"], "sqs-waiter-"))
        self.assertIsNone(re.fullmatch(param["AllowedPattern"], "a b"))
        self.assertEqual(param["MaxLength"], iam_budget.TABLE_NAME_MAX - 80)
        self.assertEqual(iam_budget.problems(["q" * 80], prefix="p" * param["MaxLength"], partition="aws"), [])
        (too_long,) = iam_budget.problems(["q" * 80], prefix="p" * (param["MaxLength"] + 1), partition="aws")
        self.assertIn("256 characters) is outside DynamoDB's 3 to 255", too_long)
        (too_short,) = iam_budget.problems(["ab"], prefix="", partition="aws")
        self.assertIn("table name 'ab' (2 characters)", too_short)



def grants(role, queues, adopted=(), partition="aws"):
    """Every table, index and queue ARN the role's policies name, once deployed with these lists."""
    policies = iam_budget.role_policies(queues, adopted, "sqs-waiter-", partition)[role]
    out = set()
    for _, doc in policies:
        for st in doc["Statement"]:
            resources = st["Resource"] if isinstance(st["Resource"], list) else [st["Resource"]]
            out.update(r for r in resources if r.startswith(f"arn:{partition}:dynamodb:")
                       or r.startswith(f"arn:{partition}:sqs:"))
    return out


def expected(queues, partition="aws"):
    region, account = iam_budget.PARTITIONS[partition], iam_budget.ACCOUNT
    out = set()
    for q in queues:
        table = f"arn:{partition}:dynamodb:{region}:{account}:table/sqs-waiter-{q}"
        out |= {table, f"{table}/index/scheduler-perform_at-index", f"arn:{partition}:sqs:{region}:{account}:{q}"}
    return out


class ExactGrants(unittest.TestCase):
    """Issue 37: each role names exactly its deployment's tables, indexes and queues."""

    def test_each_role_names_exactly_the_managed_tables_indexes_and_queues(self):
        shapes = {"created only": (["orders", "billing.fifo"], []), "adopted only": ([], ["orders", "refunds"]),
                  "mixed": (["orders"], ["billing.fifo", "refunds"])}
        for partition in iam_budget.PARTITIONS:
            for shape, (queues, adopted) in shapes.items():
                for role in iam_budget.ROLES:
                    got = grants(role, queues, adopted, partition)
                    self.assertEqual(got, expected(queues + adopted, partition), f"{role}, {shape}, {partition}")
                    self.assertFalse([r for r in got if "*" in r or "?" in r], f"{role}, {shape}: a wildcard")

    def test_no_grant_is_by_prefix_or_wildcard(self):
        # Issue 37, defects 1 and 4: table/${TablePrefix}* covered another stack's
        # sqs-waiter-prod-orders, and sqs:GetQueueUrl was granted on every queue.
        text = read("template.yaml")
        self.assertNotIn("table/${TablePrefix}*", text)
        self.assertNotRegex(text, r"AccountId\}:\*")

    def test_ids_never_collide_across_the_lists(self):
        # Issue 37, defect 3: `Adoptedorders` created and `orders` adopted, or a queue named
        # `Adopted` beside the adopted list's empty default.
        for queues, adopted in [(["Adoptedorders"], ["orders"]), (["Adopted"], []), (["Createdx"], ["x"]),
                                (["orders"], ["Createdorders"])]:
            resources = iam_budget.expand_loops(RESOURCES, {"QueueNames": queues, "AdoptedQueueNames": adopted or [""]},
                                                TEMPLATE["Mappings"], {"PollerGroups": "1"})
            ids = [i for i in resources if i.startswith(("Enqueue", "Poller")) and resources[i]["Type"] == "AWS::IAM::Policy"
                   and i not in ("EnqueueStackTables", "PollerStackTables")]
            self.assertEqual(len(ids), 2 * len(queues + (adopted or [""])), (queues, adopted))
            self.assertEqual(check_queues.problems(queues, adopted), [])

    def test_a_queue_moved_between_the_lists_keeps_a_policy_of_its_own_name(self):
        before = iam_budget.role_policies(["orders", "refunds"], [], partition="aws")
        after = iam_budget.role_policies(["orders"], ["refunds"], partition="aws")
        for role in iam_budget.ROLES:
            names_before = {n for n, _ in before[role]}
            names_after = {n for n, _ in after[role]}
            self.assertIn("created-refunds", names_before - names_after, role)
            self.assertIn("adopted-refunds", names_after - names_before, role)
            self.assertEqual(grants(role, ["orders"], ["refunds"]), grants(role, ["orders", "refunds"]), role)


class TheResolver(unittest.TestCase):
    def test_it_resolves_join_split_if_sub_and_no_value_as_cloudformation_does(self):
        names = {"AWS::Partition": "aws", "QueueNames": ["a", "b"], "TablePrefix": "p-"}
        resolve = iam_budget.Resolver(names, {"Yes": True, "No": False})
        self.assertEqual(resolve({"Fn::Split": [",", {"Fn::Join": [",", {"Ref": "QueueNames"}]}]}), ["a", "b"])
        self.assertEqual(resolve({"Fn::Sub": ["${Pre}${TablePrefix}x", {"Pre": {"Fn::If": ["Yes", "arn:", "no"]}}]}),
                         "arn:p-x")
        self.assertEqual(resolve(["k", {"Fn::If": ["No", "gone", {"Ref": "AWS::NoValue"}]}]), ["k"])
        with self.assertRaises(KeyError):
            resolve({"Ref": "NotAParameter"})


class CrossParameters(unittest.TestCase):
    """Issue 48 defect 8: what CloudFormation cannot compare, checked before `sam build`, with
    each value as the deploy will use it: PARAMS, else the stack's current one, else the
    template's default."""

    def test_values_come_from_params_then_the_stack_then_the_defaults(self):
        overrides = check_params.parse_overrides("FifoHold=60 'TablePrefix=a b'")
        self.assertEqual(overrides, {"FifoHold": "60", "TablePrefix": "a b"})
        current = {"PollerTimeout": "30", "FifoHold": "0"}
        self.assertEqual(check_params.effective(overrides, current, TEMPLATE),
                         {"PollerTimeout": "30", "FifoHold": "60", "PollerGroups": "1",
                          "PollerReservedConcurrency": "0", "BillingMode": "PAY_PER_REQUEST",
                          "ReadCapacity": "5", "WriteCapacity": "5", "MaxReadCapacity": "0",
                          "MaxWriteCapacity": "0"})
        # So raising FifoHold alone on a stack whose timeout is 30 s is refused.
        (problem,) = check_params.problems(check_params.effective(overrides, current, TEMPLATE))
        self.assertIn("PollerTimeout (30) must be at least FifoHold + 5 (65)", problem)

    def test_each_rule_refuses_one_below_and_takes_the_limit(self):
        def values(**kw):
            return {"PollerTimeout": "70", "FifoHold": "0", "PollerGroups": "1",
                    "PollerReservedConcurrency": "0", **{k: str(v) for k, v in kw.items()}}
        self.assertEqual(check_params.problems(values()), [])
        self.assertEqual(check_params.problems(values(FifoHold=65)), [])
        self.assertEqual(len(check_params.problems(values(FifoHold=66))), 1)
        self.assertEqual(check_params.problems(values(PollerGroups=4, PollerReservedConcurrency=4)), [])
        self.assertEqual(check_params.problems(values(PollerGroups=4)), [], "0 reserves none")
        (problem,) = check_params.problems(values(PollerGroups=4, PollerReservedConcurrency=3))
        self.assertIn("PollerReservedConcurrency (3) must be at least PollerGroups (4)", problem)
        # The template's own defaults fit, and FifoHold's maximum fits PollerTimeout's.
        params = TEMPLATE["Parameters"]
        self.assertEqual(check_params.problems(check_params.effective({}, {}, TEMPLATE)), [])
        self.assertEqual(params["FifoHold"]["MaxValue"] + check_params.FIFO_HOLD_MARGIN_S,
                         params["PollerTimeout"]["MaxValue"])

    def test_a_stack_that_cannot_be_read_is_said_and_the_defaults_used(self):
        os.environ.pop("AWS_PROFILE", None)
        saved = {k: os.environ.pop(k, None) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
        os.environ["AWS_SHARED_CREDENTIALS_FILE"] = os.environ["AWS_CONFIG_FILE"] = os.devnull
        os.environ["AWS_EC2_METADATA_DISABLED"] = "true"  # no instance-metadata call either
        try:
            current, why = check_params.current_parameters("no-such-stack", "us-east-1")
        finally:
            for k in ("AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE", "AWS_EC2_METADATA_DISABLED"):
                os.environ.pop(k, None)
            os.environ.update({k: v for k, v in saved.items() if v is not None})
        self.assertIsNone(current)
        self.assertIn("NoCredentialsError", why)


class UpdateMidway(unittest.TestCase):
    """Issue 48 defect 2: CloudFormation creates the policies an update adds before it deletes
    the ones it removes, so a role holds both sets midway (scripts/iam_budget.py)."""

    @staticmethod
    def deployed(lists):
        """The stack's processed template for `lists`: its loops expanded, as AWS returns it."""
        template = iam_budget.load_template()
        loops = {"QueueNames": lists["queues"] or [""], "AdoptedQueueNames": lists["adopted"] or [""]}
        template["Resources"] = iam_budget.expand_loops(template["Resources"], loops, template["Mappings"], {"PollerGroups": "1"})
        return template

    def lists(self, queues=(), adopted=()):
        return {"queues": list(queues), "adopted": list(adopted), "prefix": "sqs-waiter-", "kms_keys": []}

    def test_moving_eight_queues_to_adopted_fits_at_each_end_and_not_midway(self):
        names = [f"{i:080d}" for i in range(8)]
        current, deploy = self.lists(queues=names), self.lists(adopted=names)
        for end in (current, deploy):
            self.assertEqual(iam_budget.problems(end["queues"], end["adopted"], region="us-east-1"), [])
        (problem,) = iam_budget.update_problems(deploy, current, self.deployed(current), region="us-east-1")
        self.assertIn("passes IAM's 10240 characters per role midway in aws", problem)
        # The first step it names fits midway from now, and the second from it.
        step_text = problem.split("first QUEUES=")[1].split(" (the queues")[0]
        step_queues, step_adopted = step_text.split(" ADOPT=")
        step = self.lists([q for q in step_queues.split(",") if q], [q for q in step_adopted.split(",") if q])
        self.assertTrue(step["adopted"], problem)
        self.assertEqual(iam_budget.update_problems(step, current, self.deployed(current), region="us-east-1"), [])
        self.assertEqual(iam_budget.update_problems(deploy, step, self.deployed(step), region="us-east-1"), [])

    def test_adding_or_removing_a_queue_fits(self):
        names = [f"{i:080d}" for i in range(9)]
        for current, deploy in ((names[:8], names), (names, names[:8]), (names[:8], names[1:])):
            self.assertEqual(iam_budget.update_problems(self.lists(deploy), self.lists(current),
                                                        self.deployed(self.lists(current)), region="us-east-1"),
                             [], (current, deploy))


class ScaleOfQueues(unittest.TestCase):
    """Issue 37: one budget (scripts/iam_budget.py) for `make deploy` and these tests."""

    def test_a_deployment_at_the_limit_fits_and_one_queue_more_is_refused(self):
        limits = {}
        for partition in iam_budget.PARTITIONS:
            for length in (20, 40, 80):
                n = iam_budget.max_queues(length, partition)
                limits[(partition, length)] = n
                queues = [f"{i:0{length}d}" for i in range(n + 1)]
                self.assertEqual(iam_budget.problems(queues[:n], partition=partition), [], (partition, length))
                # Adopted queues cost what created ones do.
                self.assertEqual(iam_budget.problems(queues[:1], queues[1:n], partition=partition), [])
                refused = iam_budget.problems(queues, partition=partition)
                self.assertEqual(len(refused), 1, (partition, length))
                self.assertIn(f"{n + 1} queues do not fit one SAM stack in {partition}", refused[0])
                self.assertIn("CDK construct", refused[0])
        print("queues per SAM stack (20, 40, 80 characters): " + ", ".join(
            f"{p} {limits[(p, 20)]}/{limits[(p, 40)]}/{limits[(p, 80)]}" for p in iam_budget.PARTITIONS))
        self.assertGreaterEqual(min(limits.values()), 10, "fewer than 10 queues fit: the grants grew")
        # docs/deploy.md gives the same table.
        docs = read("docs", "deploy.md")
        for partition in iam_budget.PARTITIONS:
            row = f"| `{partition}` | {limits[(partition, 20)]} | {limits[(partition, 40)]} | {limits[(partition, 80)]} |"
            self.assertTrue(row in docs, f"docs/deploy.md's limit table is stale: no row {row}")

    def test_make_deploy_refuses_what_does_not_fit_before_sam_runs(self):
        # 40-character names: one more than aws-us-gov holds still fits us-east-1's shorter ARNs.
        queues = ",".join(f"{i:040d}" for i in range(iam_budget.max_queues(40, "aws-us-gov") + 1))
        self.assertEqual(check_queues.main(["check_queues.py", queues, "", "--region", "us-east-1"]), 0)
        self.assertEqual(check_queues.main(["check_queues.py", queues, "", "--region", "us-gov-west-1"]), 2)
        self.assertEqual(check_queues.main(["check_queues.py", "orders", "", "--prefix", ""]), 0)


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
                     "Exhausted", "BacklogAge", "HeldBack"]:
            self.assertIn(f'"{name}"', emitted, name)
        for dim in ['QUEUE_DIMENSION: &str = "Queue"', 'ERROR_TYPE_DIMENSION: &str = "ErrorType"',
                    'PRIORITY_CLASS_DIMENSION: &str = "PriorityClass"']:
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
