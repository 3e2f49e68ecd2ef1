"""Issue 73, item 4: CrossAccountGrants gives another account's principal one alias of the
enqueue function through the alias's resource policy, and every grant on the function names an
alias ARN (scripts/iam_budget.py `grant_problems`; scripts/check_grants.py). The template is
expanded and resolved as AWS would. Run by scripts/template_test.sh."""

import contextlib
import copy
import io
import os
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import check_grants  # noqa: E402
import check_queues  # noqa: E402
import iam_budget  # noqa: E402

FUNCTION = f"arn:aws:lambda:{iam_budget.PARTITIONS['aws']}:{iam_budget.ACCOUNT}:function:EnqueueFunction"
ROLE = "arn:aws:iam::210987654321:role/producer"


class CrossAccountGrants(unittest.TestCase):
    def test_each_grant_is_a_permission_on_its_alias_for_its_principal(self):
        values = {"CrossAccountGrants": f"orders--send={ROLE},view=210987654321"}
        aliases, grants = iam_budget.enqueue_grants(["orders", "billing.fifo"], ["refunds"], values)
        self.assertEqual(aliases, {"send", "view", "operate", "orders--send", "orders--view",
                                   "billing-fifo--send", "billing-fifo--view"})
        self.assertEqual(sorted((target, who) for _, target, who in grants),
                         [(f"{FUNCTION}:orders--send", ROLE), (f"{FUNCTION}:view", "210987654321")])
        self.assertEqual(iam_budget.grant_problems(["orders", "billing.fifo"], ["refunds"], values), [])
        # One resource a grant, and none for the empty default.
        base = iam_budget.resource_count(["orders", "billing.fifo"], ["refunds"])
        self.assertEqual(iam_budget.resource_count(["orders", "billing.fifo"], ["refunds"], values), base + 2)
        self.assertEqual(iam_budget.enqueue_grants(["orders"])[1], [])

    def test_a_grant_on_the_unqualified_function_or_every_alias_is_reported(self):
        template = iam_budget.load_template()
        wide = copy.deepcopy(template)
        loop = wide["Resources"]["Fn::ForEach::GrantsToOtherAccounts"][2]["EnqueueGrant&{Grant}"]
        loop["Properties"]["FunctionName"] = {"Fn::GetAtt": ["EnqueueFunction", "Arn"]}
        wide["Resources"]["EnqueueRole"]["Properties"]["Policies"].append({
            "PolicyName": "self", "PolicyDocument": {"Statement": [{
                "Effect": "Allow", "Action": "lambda:InvokeFunction",
                "Resource": {"Fn::Sub": "${EnqueueFunction.Arn}:*"}}]}})
        # Wildcards reach it too: lambda:Invoke* on function:* in a policy of its own.
        wide["Resources"]["Wild"] = {"Type": "AWS::IAM::ManagedPolicy", "Properties": {"PolicyDocument": {
            "Statement": {"Effect": "Allow", "Action": ["lambda:Invoke*"],
                          "Resource": {"Fn::Sub": "arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}:function:*"}}}}}
        found = sorted(iam_budget.grant_problems(["orders"], (), {"CrossAccountGrants": "operate=210987654321"}, wide))
        self.assertEqual(len(found), 3, found)
        self.assertIn("Wild grants lambda:InvokeFunction on arn:aws:lambda:", found[2])
        self.assertIn("EnqueueGrantoperate210987654321 grants lambda:InvokeFunction on the enqueue function,", found[0])
        self.assertIn("EnqueueRole grants lambda:InvokeFunction on the enqueue function:*", found[1])
        # The template as it is grants only aliases.
        self.assertEqual(iam_budget.grant_problems(["orders"], (), {"CrossAccountGrants": "operate=210987654321"},
                                                   template), [])

    def test_a_pattern_that_reaches_an_alias_and_a_permission_by_name_and_qualifier_are_reported(self):
        """Issue 82, defect 17: `…:EnqueueFunction:o*` reaches `operate` though it matches neither
        the function nor a made-up qualifier; a Permission's FunctionName `NAME:QUALIFIER` is the
        function's, by name."""
        template = iam_budget.load_template()
        wide = copy.deepcopy(template)
        wide["Resources"]["EnqueueRole"]["Properties"]["Policies"].append({
            "PolicyName": "o-star", "PolicyDocument": {"Statement": [{
                "Effect": "Allow", "Action": "lambda:InvokeFunction",
                "Resource": {"Fn::Sub": "${EnqueueFunction.Arn}:o*"}}]}})
        wide["Resources"]["ByName"] = {"Type": "AWS::Lambda::Permission", "Properties": {
            "Action": "lambda:InvokeFunction", "Principal": "210987654321",
            "FunctionName": {"Fn::Sub": "${EnqueueFunction}:$LATEST"}}}
        found = sorted(iam_budget.grant_problems(["orders"], (), {}, wide))
        self.assertEqual(len(found), 2, found)
        self.assertIn("ByName grants lambda:InvokeFunction on the enqueue function:$LATEST", found[0])
        self.assertIn("EnqueueRole grants lambda:InvokeFunction on the enqueue function:o*", found[1])
        # The same permission on an alias, by name, is a grant of that alias: no problem.
        wide["Resources"]["EnqueueRole"]["Properties"]["Policies"].pop()
        wide["Resources"]["ByName"]["Properties"]["FunctionName"] = {"Fn::Sub": "${EnqueueFunction}:send"}
        aliases, grants = iam_budget.enqueue_grants(["orders"], (), {}, wide)
        self.assertIn(("ByName", f"{FUNCTION}:send", "210987654321"), grants)
        self.assertEqual(iam_budget.grant_problems(["orders"], (), {}, wide), [])

    def test_make_deploy_refuses_an_entry_it_cannot_deploy_naming_it_and_the_rule(self):
        def refused(entries, queues=("orders",), makes=True, deployed=None):
            return check_grants.problems(entries, list(queues), makes, deployed)

        self.assertEqual(refused(["send=210987654321", f"orders--view={ROLE}",
                                  "view=arn:aws-cn:iam::210987654321:root"]), [])
        for entry, words in [("send", "is not ALIAS=PRINCIPAL"), ("send=1=2", "is not ALIAS=PRINCIPAL"),
                             ("billing--send=210987654321", "names the alias 'billing--send'"),
                             ("orders--operate=210987654321", "names the alias 'orders--operate'"),
                             ("view=*", "names the principal '*'"),
                             ("view=lambda.amazonaws.com", "names the principal"),
                             (f"view=arn:aws:iam::210987654321:role/{'r' * 250}", "over CloudFormation's 255")]:
            found = refused([entry])
            self.assertEqual(len(found), 1, (entry, found))
            self.assertIn(f"'{entry}'", found[0])
            self.assertIn(words, found[0])
        self.assertIn("is named twice", refused(["view=210987654321", "view=210987654321"])[0])
        self.assertIn("make one resource id", refused([f"view={ROLE}-eu", f"view={ROLE}_eu"])[-1])
        self.assertIn("QueueAliases is false", refused(["orders--send=210987654321"], makes=False)[0])
        # A comma too many is an empty entry, which CloudFormation would try to grant.
        found = check_queues.grant_problems(["orders"], [], {"CrossAccountGrants": "view=210987654321,"}, None)
        self.assertEqual(len(found), 1, found)
        self.assertIn("is empty", found[0])

    def test_make_deploy_names_a_duplicate_entry_instead_of_failing_on_the_loop(self):
        # The budget expands the grants' loop, where a duplicate id is an error: the grant check
        # runs first and names the entry.
        out = io.StringIO()
        with contextlib.redirect_stderr(out):
            code = check_queues.main(["check_queues.py", "orders", "--params",
                                      "CrossAccountGrants=view=210987654321,view=210987654321"])
        self.assertEqual(code, 2, out.getvalue())
        self.assertIn("'view=210987654321' is named twice", out.getvalue())

    def test_a_queues_own_alias_is_granted_only_once_the_stack_has_it(self):
        overrides = {"CrossAccountGrants": "orders--send=210987654321"}
        # A new stack (no current parameters), or an update that adds the queue: refused.
        for current in ({}, {"QueueNames": "billing"}, {"QueueNames": "orders", "QueueAliases": "false"}):
            found = check_queues.grant_problems(["orders"], [], {**overrides, "QueueAliases": "true"}, current)
            self.assertEqual(len(found), 1, (current, found))
            self.assertIn("deploy the queue first, then its grant", found[0])
        # A stack deployed before QueueAliases existed has no queue aliases yet: refused too.
        self.assertIn("deploy the queue first",
                      check_queues.grant_problems(["orders"], [], overrides, {"QueueNames": "orders"})[0])
        # The stack has the queue's aliases: granted. Unknown current stack: not checked.
        has = {"QueueNames": "orders", "QueueAliases": "true"}
        self.assertEqual(check_queues.grant_problems(["orders"], [], overrides, has), [])
        self.assertEqual(check_queues.grant_problems(["orders"], [], overrides, None), [])
        # The class aliases are in the same template and the grant waits for them.
        self.assertEqual(check_queues.grant_problems(["orders"], [], {"CrossAccountGrants": "send=210987654321"}, {}),
                         [])


if __name__ == "__main__":
    unittest.main()
