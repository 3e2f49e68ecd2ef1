"""Deploy rehearsal: template.yaml through LocalStack's CloudFormation, no Docker, no AWS.

It starts its own LocalStack (scripts/localstack.sh, on a free port, with CloudFormation, IAM,
Lambda, Scheduler, Logs, CloudWatch and S3) and then, as a user would over two deploys:

1. creates stack `dev` (queues orders, billing) and stack `prod` (same queues, another
   TablePrefix) side by side, and checks what the template says exists: tables (keys, index,
   TTL, point-in-time recovery), roles and their policies, functions (role, environment,
   architecture, log group), log groups (retention), the schedule (no fixed name, target, role,
   dead-letter queue, no retries), the poller's failure destination and the alarms;
2. updates `dev` by adding a queue: a new table and send policy, the old tables kept as they were;
3. deletes `dev`: everything goes except its tables (DeletionPolicy RetainExceptOnCreate);
4. creates a stack whose create fails (its table name is taken), deletes it and retries.
Where LocalStack does not implement what the template asks (retention on delete, rollback,
point-in-time recovery, log retention), the check is a listed gap (see `gap`).

What LocalStack cannot do here is replaced, and only that (docs/deploy.md "Deploy rehearsal"):
- its Lambda service would download a runtime and start Docker: the functions are created by
  the runtime executor in tests/rehearsal/noop_executor, which registers them without running;
- its SAM transform does not upload code: CodeUri points at a placeholder zip in its S3;
- its `Fn::ForEach` refuses `&{}` in logical ids and, inside a loop body, turns every string
  `Fn::Sub` into a plain string (so `arn:${AWS::Partition}:...` reaches IAM unresolved), and
  its engine recurses without end when it updates a stack that carries the SAM transform: the
  rehearsal expands the loops itself, per AWS's documented semantics, for each deploy's queue
  list, and applies the SAM transform with aws-sam-translator (the library behind AWS's own
  transform); LocalStack's CloudFormation gets the plain template and does everything after.

Exit status 0 when every check holds; otherwise each failed check is printed.
"""

import io
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import zipfile
from pathlib import Path

import boto3
from botocore.config import Config
from cfnlint.decode import cfn_yaml
from samtranslator.translator.transform import transform as sam_transform

ROOT = Path(__file__).resolve().parents[2]
SERVICES = "sqs,dynamodb,cloudformation,iam,lambda,scheduler,logs,cloudwatch,sts,s3,kms"
REGION = "us-east-1"
BUCKET = "sqs-waiter-rehearsal"
CODE_KEY = "code.zip"
STACK_TIMEOUT_S = 300

failures = []
gaps = []


def check(condition, what):
    print(("ok   " if condition else "FAIL ") + what, flush=True)
    if not condition:
        failures.append(what)
    return condition


def gap(condition, what, why):
    """A property of the template that LocalStack (the pinned version) does not implement: it
    is expected not to hold here, and is checked elsewhere (tests/template). If it starts to
    hold, LocalStack has caught up and this becomes a check: the rehearsal fails to say so."""
    if condition:
        print(f"FIXED {what}: LocalStack now does this; make it a check", flush=True)
        failures.append(f"{what} (LocalStack gap closed: make it a check)")
    else:
        print(f"gap  {what}: {why}", flush=True)
        gaps.append(what)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def alphanumeric(value):
    return "".join(c for c in value if c.isalnum())


def inline_queue_list(obj, queues):
    """`!Join [",", !Ref QueueNames]` as the string it stands for (LocalStack's engine reads a
    CommaDelimitedList parameter as a string when it updates a stack, and refuses the Join)."""
    if isinstance(obj, list):
        return [inline_queue_list(o, queues) for o in obj]
    if not isinstance(obj, dict):
        return obj
    if obj == {"Fn::Join": [",", {"Ref": "QueueNames"}]}:
        return ",".join(queues)
    return {k: inline_queue_list(v, queues) for k, v in obj.items()}


def substitute(obj, name, value):
    """The body of one Fn::ForEach iteration, as AWS::LanguageExtensions documents it."""
    if isinstance(obj, list):
        return [substitute(o, name, value) for o in obj]
    if not isinstance(obj, dict):
        return obj
    if obj == {"Ref": name}:
        return value
    if set(obj) == {"Fn::Sub"}:
        sub = obj["Fn::Sub"]
        if isinstance(sub, str):
            return {"Fn::Sub": sub.replace("${" + name + "}", value)}
        return {"Fn::Sub": [sub[0].replace("${" + name + "}", value), substitute(sub[1], name, value)]}
    return {k: substitute(v, name, value) for k, v in obj.items()}


def derived_template(queues):
    """template.yaml with its Fn::ForEach expanded for these queues, and the code in S3."""
    template = json.loads(json.dumps(cfn_yaml.loads((ROOT / "template.yaml").read_text())))
    # Loud when the template changes under the rehearsal, rather than rehearsing less.
    if template.get("Transform") != ["AWS::LanguageExtensions", "AWS::Serverless-2016-10-31"]:
        sys.exit("rehearse: template.yaml's Transform changed; update tests/rehearsal/rehearse.py")
    if template["Globals"]["Function"].get("CodeUri") != ".":
        sys.exit("rehearse: template.yaml's CodeUri changed; update tests/rehearsal/rehearse.py")
    template["Transform"] = ["AWS::Serverless-2016-10-31"]
    template["Globals"]["Function"]["CodeUri"] = f"s3://{BUCKET}/{CODE_KEY}"
    resources = {}
    loops = 0
    for key, body in template["Resources"].items():
        if not key.startswith("Fn::ForEach::"):
            resources[key] = body
            continue
        name, collection, bodies = body
        if collection != {"Ref": "QueueNames"}:
            sys.exit(f"rehearse: {key} loops over {collection}; only QueueNames is expanded here")
        loops += 1
        for queue in queues:
            for logical_id, resource in bodies.items():
                expanded = logical_id.replace("${" + name + "}", queue).replace("&{" + name + "}", alphanumeric(queue))
                if expanded in resources or expanded == logical_id:
                    sys.exit(f"rehearse: {key} expands {logical_id} to a duplicate or fixed id {expanded}")
                resources[expanded] = substitute(resource, name, queue)
    if loops == 0:
        sys.exit("rehearse: template.yaml has no Fn::ForEach left; update tests/rehearsal/rehearse.py")
    template["Resources"] = inline_queue_list(resources, queues)
    template["Globals"] = inline_queue_list(template["Globals"], queues)
    # The SAM transform, by the library AWS's own transform is built on (LocalStack's engine
    # recurses without end when it updates a stack that carries the transform).
    params = {"QueueNames": ",".join(queues), "AWS::Region": REGION, "AWS::AccountId": "000000000000",
              "AWS::Partition": "aws"}
    template = sam_transform(template, params, NoManagedPolicies())
    return json.dumps(template)


class NoManagedPolicies:
    """The template names no AWS managed policies (its roles are its own)."""

    def load(self):
        return {}


class LocalStack:
    def __init__(self):
        self.port = free_port()
        self.fs = tempfile.mkdtemp(prefix="sqs-waiter-rehearsal-")
        self.log_path = Path(self.fs) / "localstack.log"
        env = dict(os.environ)
        env.update(
            LOCALSTACK_PORT=str(self.port),
            LOCALSTACK_FILESYSTEM_ROOT=self.fs,
            SERVICES=SERVICES,
            LAMBDA_RUNTIME_EXECUTOR="sqs-waiter-noop",
            DEBUG=os.environ.get("REHEARSE_DEBUG", "0"),
        )
        self.log = open(self.log_path, "w")
        # Its own session: stopping it signals exactly this process group (LocalStack and the
        # DynamoDB Local JVM it starts), nothing else.
        self.proc = subprocess.Popen(
            ["bash", str(ROOT / "scripts/localstack.sh"), "run"],
            env=env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        self.endpoint = f"http://127.0.0.1:{self.port}"

    def wait_ready(self, timeout_s=120):
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"LocalStack exited with {self.proc.returncode}; log: {self.log_path}")
            try:
                with urllib.request.urlopen(self.endpoint + "/_localstack/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"LocalStack not ready after {timeout_s} s; log: {self.log_path}")

    def stop(self):
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=15)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.log.close()

    def client(self, service):
        return boto3.client(
            service, endpoint_url=self.endpoint, region_name=REGION,
            aws_access_key_id="test", aws_secret_access_key="test",
            config=Config(retries={"max_attempts": 2}),
        )


class Rehearsal:
    def __init__(self, ls):
        self.cfn = ls.client("cloudformation")
        self.ddb = ls.client("dynamodb")
        self.iam = ls.client("iam")
        self.lam = ls.client("lambda")
        self.sched = ls.client("scheduler")
        self.logs = ls.client("logs")
        self.cw = ls.client("cloudwatch")
        self.s3 = ls.client("s3")
        self.sqs = ls.client("sqs")

    def upload_code(self):
        self.s3.create_bucket(Bucket=BUCKET)
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as z:
            z.writestr("bootstrap", "#!/bin/sh\nexit 1\n")
        self.s3.put_object(Bucket=BUCKET, Key=CODE_KEY, Body=buf.getvalue())

    def params(self, queues, prefix):
        return [
            {"ParameterKey": "QueueNames", "ParameterValue": ",".join(queues)},
            {"ParameterKey": "TablePrefix", "ParameterValue": prefix},
        ]

    CAPS = ["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM", "CAPABILITY_AUTO_EXPAND"]

    def wait(self, stack, done):
        deadline = time.monotonic() + STACK_TIMEOUT_S
        while time.monotonic() < deadline:
            stacks = self.cfn.describe_stacks(StackName=stack)["Stacks"]
            status = stacks[0]["StackStatus"]
            if not status.endswith("_IN_PROGRESS"):
                if status != done:
                    self.print_events(stack)
                return status
            time.sleep(1)
        return "TIMEOUT"

    def print_events(self, stack):
        for e in self.cfn.describe_stack_events(StackName=stack)["StackEvents"]:
            if "FAILED" in e.get("ResourceStatus", ""):
                print(f"     {e['LogicalResourceId']}: {e['ResourceStatus']}: {e.get('ResourceStatusReason', '')}")

    def create(self, stack, queues, prefix, expect="CREATE_COMPLETE"):
        started = time.monotonic()
        self.cfn.create_stack(StackName=stack, TemplateBody=derived_template(queues),
                              Parameters=self.params(queues, prefix), Capabilities=self.CAPS)
        status = self.wait(stack, expect)
        check(status == expect, f"{stack}: create ends {expect} (got {status}, {time.monotonic() - started:.0f} s)")
        return status == expect

    def resources(self, stack):
        out = {}
        for page in self.cfn.get_paginator("list_stack_resources").paginate(StackName=stack):
            for r in page["StackResourceSummaries"]:
                out[r["LogicalResourceId"]] = r
        return out

    def physical(self, resources, logical_id):
        r = resources.get(logical_id)
        return r["PhysicalResourceId"] if r else None

    def table(self, name):
        try:
            return self.ddb.describe_table(TableName=name)["Table"]
        except self.ddb.exceptions.ResourceNotFoundException:
            return None

    def check_table(self, name):
        t = self.table(name)
        if not check(t is not None, f"table {name} exists"):
            return
        check(t["KeySchema"] == [{"AttributeName": "scheduler", "KeyType": "HASH"},
                                 {"AttributeName": "job_id", "KeyType": "RANGE"}],
              f"table {name}: keys scheduler (HASH), job_id (RANGE)")
        types = {a["AttributeName"]: a["AttributeType"] for a in t["AttributeDefinitions"]}
        check(types == {"scheduler": "S", "job_id": "S", "perform_at": "N"},
              f"table {name}: scheduler S, job_id S, perform_at N (got {types})")
        gsis = {g["IndexName"]: g for g in t.get("GlobalSecondaryIndexes", [])}
        g = gsis.get("scheduler-perform_at-index")
        check(g is not None and g["KeySchema"] == [{"AttributeName": "scheduler", "KeyType": "HASH"},
                                                   {"AttributeName": "perform_at", "KeyType": "RANGE"}]
              and g["Projection"]["ProjectionType"] == "ALL",
              f"table {name}: GSI scheduler-perform_at-index on scheduler, perform_at, projecting ALL")
        check(t.get("BillingModeSummary", {}).get("BillingMode") == "PAY_PER_REQUEST",
              f"table {name}: on-demand billing")
        ttl = self.ddb.describe_time_to_live(TableName=name)["TimeToLiveDescription"]
        check(ttl.get("TimeToLiveStatus") == "ENABLED" and ttl.get("AttributeName") == "purge_at",
              f"table {name}: TTL on purge_at (got {ttl})")
        pitr = self.ddb.describe_continuous_backups(TableName=name)["ContinuousBackupsDescription"]
        gap(pitr.get("PointInTimeRecoveryDescription", {}).get("PointInTimeRecoveryStatus") == "ENABLED",
            f"table {name}: point-in-time recovery", "LocalStack's table provider ignores PointInTimeRecoverySpecification")

    def inline_policies(self, role):
        names = self.iam.list_role_policies(RoleName=role)["PolicyNames"]
        return {n: self.iam.get_role_policy(RoleName=role, PolicyName=n)["PolicyDocument"] for n in names}

    def check_stack(self, stack, queues, prefix):
        res = self.resources(stack)
        for q in queues:
            check(f"Table{q}" in res, f"{stack}: resource Table{q}")
            self.check_table(prefix + q)

        roles = {k: self.physical(res, k) for k in ("EnqueueRole", "PollerRole", "SchedulerRole")}
        arns = {}
        for logical, name in roles.items():
            if not check(name is not None, f"{stack}: role {logical} created"):
                continue
            role = self.iam.get_role(RoleName=name)["Role"]
            arns[logical] = role["Arn"]
            attached = self.iam.list_attached_role_policies(RoleName=name)["AttachedPolicies"]
            check(attached == [], f"{stack}: {logical} has no managed policies (no AWSLambdaBasicExecutionRole)")
        if "SchedulerRole" in arns:
            trust = self.iam.get_role(RoleName=roles["SchedulerRole"])["Role"]["AssumeRolePolicyDocument"]
            if isinstance(trust, str):
                trust = json.loads(trust)
            cond = trust["Statement"][0].get("Condition", {}).get("StringEquals", {})
            check("aws:SourceAccount" in cond, f"{stack}: scheduler role trusts only this account (aws:SourceAccount)")
        for logical in ("EnqueueRole", "PollerRole"):
            if logical not in arns:
                continue
            pol = self.inline_policies(roles[logical])
            for q in queues:
                doc = pol.get(f"send-{q}")
                check(doc is not None and any(s["Action"] == "sqs:SendMessage" and s["Resource"].endswith(f":{q}")
                                              for s in doc["Statement"]),
                      f"{stack}: {logical} may send to queue {q} only through send-{q}")
            tables = json.dumps(pol)
            check(f"table/{prefix}*" in tables, f"{stack}: {logical} reaches tables by the prefix {prefix}*")

        functions = {k: self.physical(res, k) for k in ("EnqueueFunction", "PollerFunction")}
        log_groups = {k: self.physical(res, k) for k in ("EnqueueLogGroup", "PollerLogGroup")}
        fn_arns = {}
        for logical, name in functions.items():
            if not check(name is not None, f"{stack}: function {logical} created"):
                continue
            c = self.lam.get_function_configuration(FunctionName=name)
            fn_arns[logical] = c["FunctionArn"]
            role = "EnqueueRole" if logical == "EnqueueFunction" else "PollerRole"
            group = "EnqueueLogGroup" if logical == "EnqueueFunction" else "PollerLogGroup"
            env = c.get("Environment", {}).get("Variables", {})
            check(c.get("State") == "Active", f"{stack}: {logical} Active (got {c.get('State')}: {c.get('StateReason')})")
            check(c["Role"] == arns.get(role), f"{stack}: {logical} runs as {role}")
            check(c.get("Architectures") == ["arm64"], f"{stack}: {logical} is arm64 (got {c.get('Architectures')})")
            check(c.get("Runtime") == "provided.al2023" and c.get("Handler") == "bootstrap",
                  f"{stack}: {logical} on provided.al2023")
            check(env.get("WAITER_QUEUES") == ",".join(queues) and env.get("WAITER_TABLE_PREFIX") == prefix
                  and env.get("RUST_LOG") == "INFO" and env.get("WAITER_HISTORY_DAYS") == "7",
                  f"{stack}: {logical} environment WAITER_QUEUES={','.join(queues)}, WAITER_TABLE_PREFIX={prefix}, RUST_LOG=INFO, WAITER_HISTORY_DAYS=7")
            lc = c.get("LoggingConfig", {})
            check(lc.get("LogGroup") == log_groups.get(group) and lc.get("LogFormat") == "JSON"
                  and lc.get("ApplicationLogLevel") == "TRACE",
                  f"{stack}: {logical} logs JSON to {group}, application level TRACE (got {lc})")
            check("ReservedConcurrentExecutions" not in self.lam.get_function(FunctionName=name).get("Concurrency", {}),
                  f"{stack}: {logical} reserves no concurrency")
        for logical, name in log_groups.items():
            groups = self.logs.describe_log_groups(logGroupNamePrefix=name or "-")["logGroups"] if name else []
            check(any(g["logGroupName"] == name for g in groups), f"{stack}: log group {logical} created")
            gap(any(g["logGroupName"] == name and g.get("retentionInDays") == 30 for g in groups),
                f"{stack}: log group {logical} with 30 days' retention", "LocalStack's log group provider ignores RetentionInDays")

        schedules = [r for r in res.values() if r["ResourceType"] == "AWS::Scheduler::Schedule"]
        if check(len(schedules) == 1, f"{stack}: one schedule"):
            name = schedules[0]["PhysicalResourceId"]
            check(name != "PollerFunctionEveryMinute", f"{stack}: schedule name generated per stack ({name})")
            s = self.sched.get_schedule(Name=name)
            t = s["Target"]
            dlq = self.physical(res, "ScheduleDeadLetters")
            dlq_arn = self.queue_arn(dlq) if dlq else None
            check(s["ScheduleExpression"] == "rate(1 minute)" and s.get("State") == "ENABLED",
                  f"{stack}: schedule rate(1 minute), enabled")
            check(t["Arn"] == fn_arns.get("PollerFunction"), f"{stack}: schedule targets the poller")
            check(t["RoleArn"] == arns.get("SchedulerRole"), f"{stack}: schedule uses SchedulerRole")
            check(t.get("RetryPolicy", {}).get("MaximumRetryAttempts") == 0, f"{stack}: schedule does not retry")
            check(dlq_arn is not None and t.get("DeadLetterConfig", {}).get("Arn") == dlq_arn,
                  f"{stack}: schedule dead letters go to ScheduleDeadLetters")
        if "PollerFunction" in functions and functions["PollerFunction"]:
            try:
                eic = self.lam.get_function_event_invoke_config(FunctionName=functions["PollerFunction"])
            except self.lam.exceptions.ResourceNotFoundException:
                eic = {}
            failures_q = self.physical(res, "PollerFailures")
            check(eic.get("MaximumRetryAttempts") == 0
                  and eic.get("DestinationConfig", {}).get("OnFailure", {}).get("Destination") == self.queue_arn(failures_q),
                  f"{stack}: a failed poller run is not retried and lands in PollerFailures")

        expected_alarms = (ROOT / "template.yaml").read_text().count("Type: AWS::CloudWatch::Alarm")
        alarms = [r["PhysicalResourceId"] for r in res.values() if r["ResourceType"] == "AWS::CloudWatch::Alarm"]
        found = self.cw.describe_alarms(AlarmNames=alarms)["MetricAlarms"] if alarms else []
        check(len(found) == expected_alarms, f"{stack}: {expected_alarms} alarms (found {len(found)})")
        return res

    def queue_arn(self, url):
        return self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]

    def update(self, stack, queues, prefix):
        started = time.monotonic()
        self.cfn.update_stack(StackName=stack, TemplateBody=derived_template(queues),
                              Parameters=self.params(queues, prefix), Capabilities=self.CAPS)
        status = self.wait(stack, "UPDATE_COMPLETE")
        check(status == "UPDATE_COMPLETE", f"{stack}: update ends UPDATE_COMPLETE (got {status}, {time.monotonic() - started:.0f} s)")

    def delete(self, stack):
        started = time.monotonic()
        self.cfn.delete_stack(StackName=stack)
        deadline = time.monotonic() + STACK_TIMEOUT_S
        status = "TIMEOUT"
        while time.monotonic() < deadline:
            try:
                status = self.cfn.describe_stacks(StackName=stack)["Stacks"][0]["StackStatus"]
            except self.cfn.exceptions.ClientError:
                status = "DELETE_COMPLETE"
            if not status.endswith("_IN_PROGRESS"):
                break
            time.sleep(1)
        check(status == "DELETE_COMPLETE", f"{stack}: delete ends DELETE_COMPLETE (got {status}, {time.monotonic() - started:.0f} s)")


def main():
    os.environ.setdefault("AWS_DEFAULT_REGION", REGION)  # the SAM translator's pseudo parameters
    logging.getLogger("samtranslator").setLevel(logging.ERROR)
    ls = LocalStack()
    try:
        started = time.monotonic()
        ls.wait_ready()
        print(f"LocalStack ready on {ls.endpoint} in {time.monotonic() - started:.0f} s", flush=True)
        r = Rehearsal(ls)
        r.upload_code()

        # 1. Two stacks side by side.
        for stack, prefix in (("sqs-waiter-dev", "dev-"), ("sqs-waiter-prod", "prod-")):
            if not r.create(stack, ["orders", "billing"], prefix):
                return
            r.check_stack(stack, ["orders", "billing"], prefix)

        # 2. Add a queue: one new table; the others are the same tables, untouched.
        before = {q: (r.table("dev-" + q) or {}).get("CreationDateTime") for q in ("orders", "billing")}
        r.update("sqs-waiter-dev", ["orders", "billing", "refunds"], "dev-")
        r.check_stack("sqs-waiter-dev", ["orders", "billing", "refunds"], "dev-")
        for q, created in before.items():
            check(created is not None and (r.table("dev-" + q) or {}).get("CreationDateTime") == created,
                  f"sqs-waiter-dev: table dev-{q} kept through the update (not replaced)")

        # 3. Delete: the tables stay, everything else goes.
        res = r.resources("sqs-waiter-dev")
        r.delete("sqs-waiter-dev")
        gap(all(r.table("dev-" + q) is not None for q in ("orders", "billing", "refunds")),
            "after delete: the tables (DeletionPolicy RetainExceptOnCreate) retained",
            "LocalStack's engine retains only DeletionPolicy Retain and deletes the rest")
        for logical in ("EnqueueRole", "PollerRole", "SchedulerRole"):
            name = r.physical(res, logical)
            try:
                r.iam.get_role(RoleName=name)
                gone = False
            except r.iam.exceptions.NoSuchEntityException:
                gone = True
            check(gone, f"after delete: role {logical} removed")
        for logical in ("EnqueueFunction", "PollerFunction"):
            try:
                r.lam.get_function(FunctionName=r.physical(res, logical))
                gone = False
            except r.lam.exceptions.ResourceNotFoundException:
                gone = True
            check(gone, f"after delete: function {logical} removed")
        check(r.table("prod-orders") is not None, "after delete: the other stack's tables untouched")

        # 4. A failed first create: taken-orders belongs to nobody's stack, so this create fails
        #    on it; the table it did create (taken-fresh) must go with the rollback, and the
        #    retried create must succeed.
        r.ddb.create_table(TableName="taken-orders", BillingMode="PAY_PER_REQUEST",
                           AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "S"}],
                           KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}])
        r.cfn.create_stack(StackName="sqs-waiter-retry", TemplateBody=derived_template(["fresh", "orders"]),
                           Parameters=r.params(["fresh", "orders"], "taken-"), Capabilities=r.CAPS)
        status = r.wait("sqs-waiter-retry", "ROLLBACK_COMPLETE")
        check(status in ("ROLLBACK_COMPLETE", "CREATE_FAILED"), f"failed first create: the create fails on taken-orders (got {status})")
        gap(status == "ROLLBACK_COMPLETE" and r.table("taken-fresh") is None,
            "failed first create: rolled back, the table it created (taken-fresh) removed",
            f"LocalStack's engine does not roll back a failed create (it stops at {status}, resources left)")
        r.delete("sqs-waiter-retry")
        check(r.table("taken-fresh") is None, "failed first create: after the stack's delete, the table it created is gone")
        gap(r.table("taken-orders") is not None, "failed first create: the table it did not own (taken-orders) untouched",
            "LocalStack's engine deletes, with the failed stack, the table whose creation failed because it already existed")
        r.create("sqs-waiter-retry", ["fresh"], "taken-")
    finally:
        ls.stop()
        if failures:
            print(f"LocalStack log kept: {ls.log_path}")
        else:
            shutil.rmtree(ls.fs, ignore_errors=True)
    if failures:
        print(f"\n{len(failures)} check(s) failed:")
        for f in failures:
            print("  - " + f)
        sys.exit(1)
    print(f"\nrehearsal: every check holds ({len(gaps)} LocalStack gaps listed above, checked by tests/template)")


if __name__ == "__main__":
    main()
