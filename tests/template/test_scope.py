"""Issue 48, item 1: TableScope=stack, where a SAM stack's tables are {StackName}.{queue} and each
role's rights are three policies whatever the number of queues. The template is expanded and
resolved as AWS would (scripts/iam_budget.py: Fn::ForEach per AWS's reference, the conditions,
Fn::Join/Split/If/Sub), not by SAM CLI's looser port. Run by scripts/template_test.sh."""

import os
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import check_params  # noqa: E402
import check_queues  # noqa: E402
import iam_budget  # noqa: E402

STACK = "sqs-waiter-dev"


def names(n, length=80):
    return [f"{i:0{length}d}" for i in range(n)]


def statements(policies):
    return [st for _, doc in policies for st in doc["Statement"]]


class StackScope(unittest.TestCase):
    def test_each_role_names_this_stacks_tables_and_exactly_its_queues(self):
        pol = iam_budget.role_policies(["orders", "billing.fifo"], ["refunds"], scope="stack", stack=STACK,
                                       partition="aws", region="eu-west-1")
        account = iam_budget.ACCOUNT
        for role, policies in pol.items():
            # The per-queue policies (created-*, adopted-*) are off; the three stack policies on.
            self.assertEqual(sorted(n for n, _ in policies if n not in ("logs", "logs-and-failures")),
                             ["stack-queues", "stack-tables"], role)
            tables = [st for st in statements(policies) if any(a.startswith("dynamodb:") for a in st["Action"])]
            self.assertEqual([st["Resource"] for st in tables],
                             [f"arn:aws:dynamodb:eu-west-1:{account}:table/{STACK}.*"], role)
            queues = [st for st in statements(policies) if "sqs:GetQueueUrl" in st["Action"]]
            self.assertEqual(len(queues), 1, role)
            self.assertEqual(queues[0]["Resource"],
                             ["arn:*:sqs:*:*:orders", "arn:*:sqs:*:*:billing.fifo", "arn:*:sqs:*:*:refunds"], role)
            self.assertEqual(queues[0]["Condition"],
                             {"StringEquals": {"aws:ResourceAccount": account, "aws:RequestedRegion": "eu-west-1"}})
            for st in statements(policies):
                for r in st["Resource"] if isinstance(st["Resource"], list) else [st["Resource"]]:
                    self.assertNotEqual(r, "*", role)
                    # A wildcard never reaches past this stack's names: "{stack}.*" (no stack
                    # name has "."), or a queue ARN pinned by the condition above.
                    if "*" in r and ":dynamodb:" in r:
                        self.assertTrue(r.endswith(f":table/{STACK}.*"), r)

    def test_a_list_with_only_adopted_or_only_created_queues_names_no_empty_queue(self):
        for created, adopted in ((["orders"], []), ([], ["orders"])):
            pol = iam_budget.role_policies(created, adopted, scope="stack", stack=STACK)
            queues = [st for st in statements(pol["EnqueueRole"]) if "sqs:GetQueueUrl" in st["Action"]]
            self.assertEqual(queues[0]["Resource"], ["arn:*:sqs:*:*:orders"], (created, adopted))

    def test_tables_and_the_environment_follow_the_stack_name(self):
        template = iam_budget.load_template()
        table = iam_budget.expand_loops(template["Resources"], {"QueueNames": ["orders"], "AdoptedQueueNames": [""]},
                                        template["Mappings"], {"PollerGroups": "1"})["Tableorders"]
        self.assertEqual(table["Properties"]["TableName"],
                         {"Fn::If": ["StackScoped", {"Fn::Sub": "${AWS::StackName}.orders"},
                                     {"Fn::Sub": "${TablePrefix}orders"}]})
        values = iam_budget.parameter_values(template, ["orders"], [], {"TableScope": "stack", "AWS::StackName": STACK})
        env = iam_budget.Resolver(values, iam_budget.conditions_for(template["Conditions"], values))(
            template["Globals"]["Function"]["Environment"]["Variables"])
        self.assertEqual(env["WAITER_TABLE_PREFIX"], f"{STACK}.")
        self.assertEqual(iam_budget.table_names(["orders"], scope="stack", stack=STACK), [f"{STACK}.orders"])
        # The template refuses a TablePrefix beside TableScope=stack (a rule), and so does make deploy.
        rule = template["Rules"]["StackScopeHasNoPrefix"]
        self.assertEqual(rule["RuleCondition"], {"Fn::Equals": [{"Ref": "TableScope"}, "stack"]})
        self.assertEqual(template["Parameters"]["TableScope"]["Default"], "prefix",
                         "a stack deployed before TableScope must keep its table names")
        self.assertEqual(check_queues.main(["check_queues.py", "orders", "", "--params", "TableScope=stack TablePrefix=x-",
                                            "--stack", STACK]), 2)

    def test_at_the_limit_it_fits_and_one_queue_more_is_refused_naming_the_environment(self):
        limits = {}
        for partition in iam_budget.PARTITIONS:
            n = iam_budget.max_queues(80, partition, scope="stack", stack=STACK)
            limits[partition] = n
            self.assertEqual(iam_budget.problems(names(n), partition=partition, scope="stack", stack=STACK), [])
            chars = iam_budget.role_chars(names(n), partition=partition, scope="stack", stack=STACK)
            self.assertTrue(all(c <= iam_budget.ROLE_INLINE_POLICY_CHARS for c in chars.values()), chars)
            refused = iam_budget.problems(names(n + 1), partition=partition, scope="stack", stack=STACK)
            self.assertEqual(len(refused), 1, refused)
            self.assertIn("environment", refused[0])
            self.assertIn("over Lambda's 4096", refused[0])
            print(f"TableScope=stack, {partition}: {n} queues of 80 characters; roles {chars} inline characters")
        # Lambda's environment binds, not IAM: 47 for this stack name, the same in every partition.
        self.assertEqual(set(limits.values()), {47})
        # IAM alone would hold about twice that: the queue statement grows 97 characters a queue.
        chars = iam_budget.role_chars(names(90), partition="aws-us-gov", scope="stack", stack=STACK)
        self.assertTrue(all(c <= iam_budget.ROLE_INLINE_POLICY_CHARS for c in chars.values()), chars)

    def test_short_names_reach_the_stack_limit_of_100_and_101_is_refused(self):
        for scope in ("stack", "prefix"):
            refused = iam_budget.problems(names(101, 3), scope=scope, stack=STACK)
            self.assertEqual(len(refused), 1, refused)
            self.assertIn("101 queues: a stack serves at most 100", refused[0])
        self.assertEqual(iam_budget.problems(names(100, 3), scope="stack", stack=STACK), [])

    def test_the_resource_count_is_what_the_sam_transform_makes_and_past_500_is_refused(self):
        import json

        sys.path.insert(0, os.path.join(ROOT, "tests", "rehearsal"))
        os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
        from derive import derived_template

        scaling = {"BillingMode": "PROVISIONED", "MaxReadCapacity": "50", "MaxWriteCapacity": "50"}
        template = iam_budget.load_template()
        for queues, adopted, groups, values in [(["orders", "billing"], [], "1", {}),
                                                (["orders"], ["refunds"], "3", scaling)]:
            # What aws-sam-translator (AWS's own SAM transform) makes, counted where the
            # resource's condition holds, as CloudFormation would create it.
            transformed = json.loads(derived_template(queues, adopted, int(groups)))
            given = iam_budget.parameter_values(template, queues, adopted, {**values, "PollerGroups": groups})
            conditions = iam_budget.conditions_for(transformed.get("Conditions", {}), given)
            created = [r for r in transformed["Resources"].values()
                       if not r.get("Condition") or conditions[r["Condition"]]]
            self.assertEqual(iam_budget.resource_count(queues, adopted, {**values, "PollerGroups": groups}),
                             len(created), (queues, adopted, values))
        # 100 short queues fit. With autoscaling each created table brings 8 more resources, and
        # each queue 2 aliases of its own (QueueAliases=true, the default): 42 fit, the 43rd is
        # refused naming QueueAliases, and without them 52 fit.
        self.assertEqual(iam_budget.problems(names(100, 3), scope="stack", stack=STACK), [])
        for n, aliases in [(42, "true"), (52, "false")]:
            values = {**scaling, "QueueAliases": aliases}
            self.assertEqual(iam_budget.problems(names(n, 3), scope="stack", stack=STACK, values=values), [])
            refused = iam_budget.problems(names(n + 1, 3), scope="stack", stack=STACK, values=values)
            self.assertEqual(len(refused), 1, refused)
            self.assertIn("QueueAliases=false", refused[0])
        self.assertIn("over CloudFormation's 500 per stack", refused[0])

    def test_an_update_rewrites_the_policies_in_place_so_midway_is_the_larger_end(self):
        # With TableScope=prefix 8 queues of 80 characters moved to the adopted list pass IAM
        # midway (UpdateMidway in test_template.py); here each policy keeps its name.
        template = iam_budget.load_template()
        deployed = {"queues": names(40), "adopted": [], "prefix": "sqs-waiter-", "kms_keys": [],
                    "scope": "stack", "stack": STACK}
        current = dict(deployed)
        processed = dict(template)
        values = iam_budget.parameter_values(template, names(40), [], {"TableScope": "stack"})
        processed["Resources"] = iam_budget.expand_loops(
            template["Resources"], {"QueueNames": names(40), "AdoptedQueueNames": [""]}, template["Mappings"], values)
        moved = {**deployed, "queues": names(20), "adopted": names(40)[20:]}
        self.assertEqual(iam_budget.update_problems(moved, current, processed, partition="aws"), [])
        new = iam_budget.role_policies(names(20), names(40)[20:], scope="stack", stack=STACK)
        old = iam_budget.role_policies(names(40), [], scope="stack", stack=STACK)
        peak = iam_budget.peak_chars(new, old)
        end = {role: iam_budget.policy_chars(p) for role, p in new.items()}
        self.assertEqual(peak, end)

    def test_make_deploy_refuses_changing_the_scope_of_a_stack(self):
        for current, overrides, refused in [
            ({"QueueNames": "orders"}, {"TableScope": "stack"}, True),  # predates the parameter: prefix
            ({"TableScope": "prefix"}, {"TableScope": "stack"}, True),
            ({"TableScope": "stack"}, {"TableScope": "prefix"}, True),
            ({"TableScope": "stack"}, {}, False),  # left out: the stack's value (UsePreviousValue)
            ({}, {"TableScope": "stack"}, False),  # a new stack chooses
        ]:
            found = check_params.scope_changed(overrides, current)
            self.assertEqual(bool(found), refused, (current, overrides, found))
            if refused:
                self.assertIn("rename the stack's tables", found[0])


if __name__ == "__main__":
    unittest.main(verbosity=2)
