"""Unit tests of cfn_proxy's reading of a CreateChangeSet (run by scripts/template_test.sh):
the query protocol's members, and the loop parameters' values, as given, as the stack's
previous value (UsePreviousValue, which SAM CLI sends for a parameter left out of an update),
or at the template's default."""

import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cfn_proxy import CfnProxy, members  # noqa: E402

TEMPLATE = {"Parameters": {"QueueNames": {"Default": ""}, "AdoptedQueueNames": {"Default": ""},
                           "CrossAccountGrants": {"Default": ""}, "PollerGroups": {"Default": "1"}}}


class StubCfn:
    def __init__(self, parameters):
        self.parameters = parameters
        self.calls = 0

    def describe_stacks(self, StackName):
        self.calls += 1
        return {"Stacks": [{"StackName": StackName, "Parameters": [
            {"ParameterKey": k, "ParameterValue": v} for k, v in self.parameters.items()]}]}


def values(form, previous):
    proxy = CfnProxy.__new__(CfnProxy)  # parameter_values needs only `cfn`
    proxy.cfn = StubCfn(previous)
    return proxy.parameter_values(form, TEMPLATE), proxy.cfn.calls


def param(n, key, value=None, previous=False):
    out = {f"Parameters.member.{n}.ParameterKey": key}
    if previous:
        out[f"Parameters.member.{n}.UsePreviousValue"] = "true"
    else:
        out[f"Parameters.member.{n}.ParameterValue"] = value
    return out


class ParameterValues(unittest.TestCase):
    def test_members_are_read_in_their_order(self):
        form = {"Capabilities.member.2": "CAPABILITY_AUTO_EXPAND", "Capabilities.member.1": "CAPABILITY_IAM",
                **param(1, "QueueNames", "a,b")}
        self.assertEqual([m[""] for m in members(form, "Capabilities")], ["CAPABILITY_IAM", "CAPABILITY_AUTO_EXPAND"])
        self.assertEqual(members(form, "Parameters"), [{"ParameterKey": "QueueNames", "ParameterValue": "a,b"}])

    def test_a_create_takes_the_given_values_and_the_defaults_without_reading_the_stack(self):
        got, calls = values({"StackName": "s", **param(1, "QueueNames", "a,b"), **param(2, "PollerGroups", "2")}, {})
        self.assertEqual(got, {"QueueNames": "a,b", "AdoptedQueueNames": "", "CrossAccountGrants": "", "PollerGroups": "2"})
        self.assertEqual(calls, 0)

    def test_an_update_takes_the_stacks_value_for_a_parameter_left_out(self):
        form = {"StackName": "s", **param(1, "QueueNames", "a"), **param(2, "AdoptedQueueNames", ""),
                **param(3, "PollerGroups", previous=True), **param(4, "CrossAccountGrants", previous=True)}
        got, calls = values(form, {"PollerGroups": "4", "CrossAccountGrants": "send=123456789012", "QueueNames": "old"})
        self.assertEqual(got, {"QueueNames": "a", "AdoptedQueueNames": "", "CrossAccountGrants": "send=123456789012",
                               "PollerGroups": "4"})
        self.assertEqual(calls, 1)

    def test_a_previous_value_the_stack_lacks_is_refused(self):
        with self.assertRaisesRegex(ValueError, "PollerGroups has UsePreviousValue"):
            values({"StackName": "s", **param(1, "PollerGroups", previous=True)}, {"QueueNames": "a"})


if __name__ == "__main__":
    unittest.main()
