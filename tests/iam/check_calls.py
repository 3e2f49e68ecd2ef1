#!/usr/bin/env python3
"""Every AWS call the functions made in the e2e suite, checked against the statements their
roles get from template.yaml and from the CDK construct (issue 24, item 3).

    check_calls.py [DIR]     (default target/iam-calls, written by the fault proxy)

The fault proxy records, per call, the function that made it (the access key it signs with),
the IAM action (a transaction's item actions, `SendMessage` for a batch) and the table, index or
queue (tests/src/iam_calls.rs). Each call is moved onto one deployment, the queues the suite
used with `TablePrefix` `sqs-waiter-`, and must be allowed there by an `Allow` statement of that
function's role, matched as IAM matches: actions case-insensitively with `*` and `?`, resources
case-sensitively with `*` and `?`. A call made but not granted by either fails the build.

Why not an IAM-enforcing emulator: moto (5.2.5) checks identity policies once
`INITIAL_NO_AUTH_ACTION_COUNT` calls are made, but authorises every DynamoDB call against the
resource `*` (only SQS, IAM and STS name their resource), so it cannot tell a table grant from
a wrong one; LocalStack Community does not enforce IAM.
"""

import fnmatch
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "rehearsal"))
sys.path.insert(0, str(ROOT / "scripts"))
from iam_budget import Resolver, conditions_for  # noqa: E402  (one resolver for the budget and here)
# The SAM translator (in derive.py) reads the region from the environment.
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")

REGION, ACCOUNT, PREFIX = "us-east-1", "123456789012", "sqs-waiter-"
# The stack name of the TableScope=stack case (docs/tables.md "Table scope").
STACK = "sqs-waiter"
# A customer-managed key for the KMS case: a queue encrypted with it needs both actions on it.
KMS_KEY = f"arn:aws:kms:{REGION}:{ACCOUNT}:key/11111111-2222-3333-4444-555555555555"
KMS_ACTIONS = ("kms:GenerateDataKey", "kms:Decrypt")
ROLES = {"enqueue": "Enqueue", "poller": "Poller"}


def read_calls(directory):
    """{(principal, action, resource ARN)}: every call, moved onto the deployment checked; the
    queues; and the functions' calls on a table outside their deployment (none is right)."""
    calls, queues, outside = set(), set(), []
    for path in sorted(Path(directory).glob("*.jsonl")):
        deployment = None
        for line in path.read_text().splitlines():
            record = json.loads(line)
            if "deployment" in record:
                deployment = record["deployment"]
                queues.update(deployment["queues"])
                continue
            if record["principal"] not in ROLES:
                continue  # another process signing through the proxy
            arn = resource_arn(record["resource"], deployment) if deployment else None
            if arn is None:
                outside.append(record)
                continue
            calls.add((record["principal"], record["action"], arn))
    return calls, sorted(queues), outside


def resource_arn(resource, deployment):
    """The ARN a recorded call has in the deployment checked (`None`: not the deployment's)."""
    if not isinstance(resource, dict):
        return None
    if "queue" in resource:
        return f"arn:aws:sqs:{REGION}:{ACCOUNT}:{resource['queue']}"
    table, prefix = resource["table"], deployment["table_prefix"]
    if not table.startswith(prefix) or table[len(prefix):] not in deployment["queues"]:
        return None
    arn = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{PREFIX}{table[len(prefix):]}"
    return f"{arn}/index/{resource['index']}" if "index" in resource else arn


def role_statements(template, role_of, names):
    """{principal: [statements]}: every Allow statement of each function's role."""
    resources = template["Resources"]
    conditions = conditions_for(template.get("Conditions", {}), names)

    def getatt(logical, attribute):
        r = resources.get(logical, {})
        if r.get("Type") == "AWS::DynamoDB::Table" and attribute == "Arn":
            return f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{resolve(r['Properties']['TableName'])}"
        return f"getatt:{logical}.{attribute}"

    resolve = Resolver(names, conditions, getatt=getatt, unknown=lambda name: f"ref:{name}")
    out = {}
    for principal, role in role_of(resources).items():
        statements = []
        for p in resources[role]["Properties"].get("Policies", []):
            statements += listed(p["PolicyDocument"]["Statement"])
        for r in resources.values():
            if r.get("Condition") and not conditions.get(r["Condition"]):
                continue
            if r["Type"] in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy") and \
                    {"Ref": role} in r["Properties"].get("Roles", []):
                statements += listed(r["Properties"]["PolicyDocument"]["Statement"])
        out[principal] = [resolve(s) for s in statements if s.get("Effect") == "Allow"]
    return out


def listed(v):
    return v if isinstance(v, list) else [v]


def allows(statements, action, arn):
    """Whether an Allow statement grants `action` on `arn`, as IAM matches them."""
    for s in statements:
        actions = [a.lower() for a in listed(s.get("Action", []))]
        if not any(fnmatch.fnmatchcase(action.lower(), a) for a in actions):
            continue
        if any(fnmatch.fnmatchcase(arn, r) for r in listed(s.get("Resource", [])) if isinstance(r, str)):
            return True
    return False


def sam_statements(queues, kms=False, scope="prefix"):
    from derive import derived_template

    template = json.loads(derived_template(queues))
    names = {"AWS::Region": REGION, "AWS::AccountId": ACCOUNT, "AWS::Partition": "aws",
             "AWS::URLSuffix": "amazonaws.com", "TablePrefix": PREFIX, "QueueNames": queues,
             "AdoptedQueueNames": [""], "QueueKmsKeyArns": [KMS_KEY] if kms else [""],
             "TableScope": scope, "AWS::StackName": STACK}
    for name, p in template.get("Parameters", {}).items():
        names.setdefault(name, p.get("Default", ""))
    names["QueueKmsKeyArns"] = [KMS_KEY] if kms else [""]

    def role_of(resources):
        return {p: resources[f"{r}Function"]["Properties"]["Role"]["Fn::GetAtt"][0] for p, r in ROLES.items()}

    return role_statements(template, role_of, names)


def sam_stack_statements(queues, kms=False):
    return sam_statements(queues, kms, "stack")


def on_stack_tables(calls):
    """The calls as a TableScope=stack deployment makes them: its tables are {stack}.{queue}."""
    table = f":table/{PREFIX}"
    return {(p, a, r.replace(table, f":table/{STACK}.", 1)) for p, a, r in calls}


def cdk_statements(queues, kms=False):
    args = ["node", "--import", "tsx", "test/synth-for-iam.ts", ",".join(queues), PREFIX] + ([KMS_KEY] if kms else [])
    out = subprocess.run(args, cwd=ROOT / "infra", check=True, capture_output=True, text=True).stdout
    template = json.loads(out)
    names = {"AWS::Region": REGION, "AWS::AccountId": ACCOUNT, "AWS::Partition": "aws", "AWS::URLSuffix": "amazonaws.com"}

    def role_of(resources):
        found = {}
        for logical, r in resources.items():
            if r["Type"] == "AWS::Lambda::Function":
                for principal, role in ROLES.items():
                    if logical.startswith(f"Waiter{role}"):
                        found[principal] = r["Properties"]["Role"]["Fn::GetAtt"][0]
        return found

    return role_statements(template, role_of, names)


def kms_calls(calls):
    """A KMS-encrypted queue makes SQS use its key with the sender's rights: each sender of a
    queue needs both KMS actions on the key."""
    senders = {p for p, a, _ in calls if a == "sqs:SendMessage"}
    return {(p, a, KMS_KEY) for p in senders for a in KMS_ACTIONS}


def ungranted(calls, statements):
    return sorted(c for c in calls if not allows(statements.get(c[0], []), c[1], c[2]))


def main(argv):
    directory = argv[1] if len(argv) > 1 else ROOT / "target" / "iam-calls"
    calls, queues, outside = read_calls(directory)
    if not calls:
        print(f"check_calls: no calls recorded under {directory} (run the e2e suite first)")
        return 1
    for record in outside:
        print(f"check_calls: OUTSIDE its deployment: {json.dumps(record)}")
    failed = bool(outside)
    for name, statements_of, moved in [("template.yaml", sam_statements, calls),
                                       ("template.yaml with TableScope=stack", sam_stack_statements, on_stack_tables(calls)),
                                       ("the CDK construct", cdk_statements, calls)]:
        for kms in (False, True):
            checked = moved | (kms_calls(moved) if kms else set())
            missing = ungranted(checked, statements_of(queues, kms))
            label = f"{name}{' with a KMS-encrypted queue' if kms else ''}"
            for p, a, r in missing:
                print(f"check_calls: NOT GRANTED by {label}: {p} {a} on {r}")
            failed |= bool(missing)
            print(f"check_calls: {label}: {len(checked) - len(missing)} of {len(checked)} calls granted")
    actions = sorted({(p, a) for p, a, _ in calls})
    print(f"check_calls: {len(calls)} distinct calls over {len(queues)} queues, "
          f"{len(actions)} (function, action) pairs: " + ", ".join(f"{p} {a}" for p, a in actions))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
