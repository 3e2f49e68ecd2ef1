"""Deploy rehearsal: template.yaml through LocalStack's CloudFormation, no Docker, no AWS.

It starts its own LocalStack (scripts/localstack.sh, on a free port, with CloudFormation, IAM,
Lambda, Scheduler, Logs, CloudWatch and S3) and then, as a user would over several deploys,
checks what the template says exists and sends jobs through the deployed functions
(roundtrip.py): stacks side by side, an update that adds a queue, a queue taken out with a job
stored and adopted back, a delete and a re-create that adopts the kept tables, and a failed
first create retried by adoption. docs/deploy.md "Deploy rehearsal" lists the steps.

What LocalStack cannot do here is replaced, and only that (docs/deploy.md says why):
- its Lambda service would download a runtime and start Docker: the runtime executor in
  tests/rehearsal/host_executor runs each function's bootstrap (the host's debug build, which
  `make test` builds once) as a host process;
- its EventBridge Scheduler never fires: the rehearsal invokes the schedule's target with the
  schedule's input;
- its SAM transform does not upload code: CodeUri points at the zipped bootstraps in its S3;
- its `Fn::ForEach` refuses `&{}` in logical ids and turns a loop body's `Fn::Sub` strings into
  plain strings, and its engine recurses when it updates a stack with the SAM transform: the
  loops are expanded and the SAM transform applied as AWS does (derive.py), here for steps 0-5
  and at CreateChangeSet (cfn_proxy.py) for the commands of step 6, run as typed (as_typed.py).

Exit status 0 when every check holds; otherwise each failed check is printed.
"""

import json
import logging
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

import as_typed
import cdk_stack
import midway
from cfn_proxy import CfnProxy
import options
from own_localstack import LocalStack
from derive import BINARIES, BUCKET, REGION, derived_template, stripped_bootstrap, zipped_dir
from aliases import CROSS_ACCOUNT_GRANT, cross_account_grant, through_aliases
import from_dist
from roundtrip import Consumer, Deliveries, RoundTrip, schedule_ref

ROOT = Path(__file__).resolve().parents[2]
STACK_TIMEOUT_S = 300
# The functions run on this host (tests/rehearsal/host_executor): the stacks are deployed for
# its architecture (also the CDK apps'), with the binaries `make test` builds once.
ARCH = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "arm64", "arm64": "arm64"}[os.uname().machine]
# Jobs due in more than DIRECT_MAX_DELAY seconds are stored (the deployed default is 900): the
# rehearsal stores jobs a few seconds ahead and has the poller hand them over.
DIRECT_MAX_DELAY = 0
# sqs-waiter-dev runs TableScope=stack: its tables are named by the stack.
DEV = "sqs-waiter-dev."
STORED_DELAY_S = 8

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
        self.kms = ls.client("kms")
        self.endpoint = ls.endpoint
        self.templates = []
        self.provisioned_prefixes = set()

    def upload_code(self):
        """Each function's bootstrap, as `sam build` would package it."""
        self.s3.create_bucket(Bucket=BUCKET)
        for binary in BINARIES:
            with tempfile.TemporaryDirectory() as tmp:
                stripped_bootstrap(binary, Path(tmp) / "bootstrap")
                self.s3.put_object(Bucket=BUCKET, Key=f"{binary}.zip", Body=zipped_dir(tmp))

    def template(self, queues, adopted=(), groups=1, grants=(), source=None):
        """The derived template for CreateStack and UpdateStack, from S3 (TemplateURL), as
        `make deploy` sends it (samconfig's resolve_s3): inline, CloudFormation takes at most
        51,200 bytes, which a stack of two queues with its autoscaling resources passes."""
        body = derived_template(queues, adopted, groups, grants, source)
        key = f"templates/{len(self.templates)}.json"
        self.templates.append(key)
        self.s3.put_object(Bucket=BUCKET, Key=key, Body=body.encode())
        return {"TemplateURL": f"{self.endpoint}/{BUCKET}/{key}"}

    def params(self, queues, prefix, adopted=(), groups=1, extra=None):
        # With TableScope=stack the tables are {stack}.{q}, and the template's rule wants no TablePrefix.
        scoped = (extra or {}).get("TableScope") == "stack"
        return [*({"ParameterKey": k, "ParameterValue": v} for k, v in (extra or {}).items()),
            {"ParameterKey": "PollerGroups", "ParameterValue": str(groups)},
            {"ParameterKey": "QueueNames", "ParameterValue": ",".join(queues)},
            {"ParameterKey": "AdoptedQueueNames", "ParameterValue": ",".join(adopted)},
            *([] if scoped else [{"ParameterKey": "TablePrefix", "ParameterValue": prefix}]),
            {"ParameterKey": "Architecture", "ParameterValue": ARCH},
            {"ParameterKey": "DirectMaxDelay", "ParameterValue": str(DIRECT_MAX_DELAY)},
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

    # PollerGroups and further parameters of each stack, as last deployed.
    groups = {}
    extra = {}

    def create(self, stack, queues, prefix, expect="CREATE_COMPLETE", adopted=(), groups=1, extra=None, source=None):
        started = time.monotonic()
        self.groups[stack], self.extra[stack] = groups, extra
        self.cfn.create_stack(StackName=stack, **self.template(queues, adopted, groups, source=source),
                              Parameters=self.params(queues, prefix, adopted, groups, extra), Capabilities=self.CAPS)
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
              and g["Projection"] == {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["priority", "weight"]},
              f"table {name}: GSI scheduler-perform_at-index on scheduler, perform_at, projecting the keys, "
              f"priority and weight (IndexProjection's default; got {g and g['Projection']})")
        # Tables of a stack deployed PROVISIONED (the prod stack, ProdOptions) are checked there.
        if not any(name.startswith(p) for p in self.provisioned_prefixes):
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

    def check_grants(self, stack, logical, role, role_arn, own, prefix, queues, adopted):
        """The deployed role names exactly the managed tables, indexes and queues, each through
        the policy of its list (issue 37): no prefix, no wildcard, nothing left from before."""
        pol = self.inline_policies(role)
        account = role_arn.split(":")[4]
        named = set()
        for doc in pol.values():
            for st in doc["Statement"]:
                for r in st["Resource"] if isinstance(st["Resource"], list) else [st["Resource"]]:
                    if (":dynamodb:" in r or ":sqs:" in r) and r not in own:
                        named.add(r)
        want = set()
        scoped = (self.extra.get(stack) or {}).get("TableScope") == "stack"
        for q in list(queues) + list(adopted):
            table = f"arn:aws:dynamodb:{REGION}:{account}:table/{prefix}{q}"
            want |= {f"arn:aws:dynamodb:{REGION}:{account}:table/{stack}.*", f"arn:*:sqs:*:*:{q}"} if scoped else \
                {table, f"{table}/index/scheduler-perform_at-index", f"arn:aws:sqs:{REGION}:{account}:{q}"}
        check(named == want, f"{stack}: {logical} names exactly the tables, indexes and queues of "
                             f"{', '.join(list(queues) + list(adopted))} (extra: {sorted(named - want)}, "
                             f"missing: {sorted(want - named)})")
        lists = {f"created-{q}" for q in queues} | {f"adopted-{q}" for q in adopted}
        if scoped:
            lists = {"stack-tables", "stack-queues"}
            pinned = [st.get("Condition") for st in pol.get("stack-queues", {}).get("Statement", [])]
            check(pinned == [{"StringEquals": {"aws:ResourceAccount": account, "aws:RequestedRegion": REGION}}],
                  f"{stack}: {logical}'s queue ARNs are pinned to this account and region (got {pinned})")
        check(lists <= set(pol), f"{stack}: {logical} holds {', '.join(sorted(lists))} (got {sorted(pol)})")

    def check_stack(self, stack, queues, prefix, adopted=()):
        res = self.resources(stack)
        for q in queues:
            check(f"Table{q}" in res, f"{stack}: resource Table{q}")
            self.check_table(prefix + q)
        for q in adopted:
            # LocalStack keeps listing a resource that DeletionPolicy Retain kept, as
            # DELETE_SKIPPED; AWS drops it from the stack. Either way the stack does not own it.
            owned = res.get(f"Table{q}", {}).get("ResourceStatus", "DELETE_SKIPPED") != "DELETE_SKIPPED"
            check(not owned, f"{stack}: adopts table {prefix}{q}, owns no resource Table{q}")
            self.check_table(prefix + q)
        managed = list(queues) + list(adopted)

        roles = {k: self.physical(res, k) for k in ("EnqueueRole", "PollerRole", "SchedulerRole")}
        arns = {}
        for logical, name in roles.items():
            if not check(name is not None, f"{stack}: role {logical} created"):
                continue
            role = self.iam.get_role(RoleName=name)["Role"]
            arns[logical] = role["Arn"]
            attached = [p["PolicyName"] for p in self.iam.list_attached_role_policies(RoleName=name)["AttachedPolicies"]]
            # With Tracing=Active, X-Ray's writes (no resource ARNs), as SAM's own roles get them.
            xray = ["AWSXRayDaemonWriteAccess"] if (self.extra.get(stack) or {}).get("Tracing") == "Active" \
                and logical != "SchedulerRole" else []
            check(attached == xray, f"{stack}: {logical} has no managed policies but {xray or 'none'} "
                                    f"(no AWSLambdaBasicExecutionRole; got {attached})")
        schedule_group = self.physical(res, "PollerScheduleGroup")
        if "SchedulerRole" in arns:
            trust = self.iam.get_role(RoleName=roles["SchedulerRole"])["Role"]["AssumeRolePolicyDocument"]
            if isinstance(trust, str):
                trust = json.loads(trust)
            cond = trust["Statement"][0].get("Condition", {})
            check("aws:SourceAccount" in cond.get("StringEquals", {}),
                  f"{stack}: scheduler role trusts only this account (aws:SourceAccount)")
            group_arn = self.sched.get_schedule_group(Name=schedule_group)["Arn"] if schedule_group else None
            source = cond.get("ArnEquals", {}).get("aws:SourceArn")
            check(group_arn is not None and source == group_arn,
                  f"{stack}: scheduler role trusts only this stack's schedule group (aws:SourceArn {source}, group {group_arn})")
        failures_q = self.physical(res, "PollerFailures")
        own = {self.queue_arn(failures_q)} if failures_q else set()
        for logical in ("EnqueueRole", "PollerRole"):
            if logical not in arns:
                continue
            self.check_grants(stack, logical, roles[logical], arns[logical], own, prefix, queues, adopted)

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
            check(c.get("Architectures") == [ARCH], f"{stack}: {logical} is {ARCH} (got {c.get('Architectures')})")
            check(c.get("Runtime") == "provided.al2023" and c.get("Handler") == "bootstrap",
                  f"{stack}: {logical} on provided.al2023")
            check(env.get("WAITER_QUEUES") == ",".join(managed) and env.get("WAITER_TABLE_PREFIX") == prefix
                  and env.get("RUST_LOG") == "INFO" and env.get("WAITER_HISTORY_DAYS") == "7"
                  and env.get("WAITER_HISTORY_BODY") == "false"
                  and env.get("WAITER_DIRECT_MAX_DELAY") == str(DIRECT_MAX_DELAY),
                  f"{stack}: {logical} environment WAITER_QUEUES={','.join(managed)}, WAITER_TABLE_PREFIX={prefix}, RUST_LOG=INFO, WAITER_HISTORY_DAYS=7, WAITER_DIRECT_MAX_DELAY={DIRECT_MAX_DELAY}")
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
        groups = self.groups.get(stack, 1)
        inputs = []
        check(len(schedules) == groups, f"{stack}: one schedule per poller group ({groups}, got {len(schedules)})")
        for schedule in schedules:
            name = schedule["PhysicalResourceId"]
            check(name != "PollerFunctionEveryMinute", f"{stack}: schedule name generated per stack ({name})")
            s = self.sched.get_schedule(Name=name, GroupName=schedule_group or "default")
            check(schedule_group is not None and s.get("GroupName") == schedule_group,
                  f"{stack}: schedule in the stack's own group ({schedule_group})")
            t = s["Target"]
            inputs.append(json.loads(t.get("Input") or "{}"))
            dlq = self.physical(res, "ScheduleDeadLetters")
            dlq_arn = self.queue_arn(dlq) if dlq else None
            check(s["ScheduleExpression"] == "rate(1 minute)" and s.get("State") == "ENABLED",
                  f"{stack}: schedule rate(1 minute), enabled")
            check(t["Arn"] == fn_arns.get("PollerFunction"), f"{stack}: schedule targets the poller")
            check(t["RoleArn"] == arns.get("SchedulerRole"), f"{stack}: schedule uses SchedulerRole")
            check(t.get("RetryPolicy", {}).get("MaximumRetryAttempts") == 0, f"{stack}: schedule does not retry")
            check(dlq_arn is not None and t.get("DeadLetterConfig", {}).get("Arn") == dlq_arn,
                  f"{stack}: schedule dead letters go to ScheduleDeadLetters")
        check(sorted(inputs, key=lambda i: i.get("group", -1)) == [{"group": g, "groups": groups} for g in range(groups)],
              f"{stack}: each schedule runs its poller group ({inputs})")
        if "PollerFunction" in functions and functions["PollerFunction"]:
            try:
                eic = self.lam.get_function_event_invoke_config(FunctionName=functions["PollerFunction"])
            except self.lam.exceptions.ResourceNotFoundException:
                eic = {}
            check(eic.get("MaximumRetryAttempts") == 0
                  and eic.get("DestinationConfig", {}).get("OnFailure", {}).get("Destination") == self.queue_arn(failures_q),
                  f"{stack}: a failed poller run is not retried and lands in PollerFailures")

        expected_alarms = (ROOT / "template.yaml").read_text().count("Type: AWS::CloudWatch::Alarm")
        alarms = [r["PhysicalResourceId"] for r in res.values() if r["ResourceType"] == "AWS::CloudWatch::Alarm"]
        found = self.cw.describe_alarms(AlarmNames=alarms)["MetricAlarms"] if alarms else []
        check(len(found) == expected_alarms, f"{stack}: {expected_alarms} alarms (found {len(found)})")
        dashboards = [r for r in res.values() if r["ResourceType"] == "AWS::CloudWatch::Dashboard"]
        names = [d["DashboardName"] for d in self.cw.list_dashboards().get("DashboardEntries", [])]
        gap(any(d.get("PhysicalResourceId") in names for d in dashboards),
            f"{stack}: the operator's dashboard",
            "LocalStack Community has no AWS::CloudWatch::Dashboard provider, and its CloudFormation "
            "skips unsupported types (tests/template checks the body, docs/dashboard.svg draws it)")
        return res

    def schedule(self, stack, res):
        """The stack's schedules, one per poller group, or None (a failed check)."""
        group = self.physical(res, "PollerScheduleGroup")
        schedules = [schedule_ref(group, r["PhysicalResourceId"]) for r in res.values() if r["ResourceType"] == "AWS::Scheduler::Schedule"]
        return schedules if check(len(schedules) >= 1, f"{stack}: a schedule to run") else None

    def deliver(self, rt, stack, queue):
        """A direct and a stored job, by boto3 and by the CLI, through this stack's functions."""
        res = self.resources(stack)
        schedule, enqueue = self.schedule(stack, res), self.physical(res, "EnqueueFunction")
        if schedule and check(enqueue, f"{stack}: an enqueue function to run"):
            rt.round_trip(stack, enqueue, schedule, queue, STORED_DELAY_S)
            through_aliases(rt, stack, enqueue, queue, check)

    def deliver_held(self, rt, stack, queue, held):
        """Jobs stored before the stack changed, delivered by the stack's next poller run (late,
        since they fell due meanwhile, but never early)."""
        schedule = self.schedule(stack, self.resources(stack))
        if schedule:
            rt.hand_over_and_receive(stack, schedule, queue, held, len(held), on_time=False)

    def queue_arn(self, url):
        return self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]

    def update(self, stack, queues, prefix, adopted=(), grants=()):
        started = time.monotonic()
        self.cfn.update_stack(StackName=stack, **self.template(queues, adopted, self.groups.get(stack, 1), grants),
                              Parameters=self.params(queues, prefix, adopted, self.groups.get(stack, 1),
                                                     {**(self.extra.get(stack) or {}),
                                                      "CrossAccountGrants": ",".join(grants)}),
                              Capabilities=self.CAPS)
        status = self.wait(stack, "UPDATE_COMPLETE")
        check(status == "UPDATE_COMPLETE", f"{stack}: update ends UPDATE_COMPLETE (got {status}, {time.monotonic() - started:.0f} s)")

    def delete(self, stack):
        started = time.monotonic()
        created = set(self.resources(stack))
        self.cfn.delete_stack(StackName=stack)
        deadline = time.monotonic() + STACK_TIMEOUT_S
        status = "TIMEOUT"
        phantoms = set()
        while time.monotonic() < deadline:
            try:
                status = self.cfn.describe_stacks(StackName=stack)["Stacks"][0]["StackStatus"]
            except self.cfn.exceptions.ClientError:
                status = "DELETE_COMPLETE"
            if status == "DELETE_FAILED":
                try:
                    events = self.cfn.describe_stack_events(StackName=stack)["StackEvents"]
                except self.cfn.exceptions.ClientError:
                    status = "DELETE_COMPLETE"  # the delete ended between the two calls
                    break
                failed = {e["LogicalResourceId"] for e in events if e.get("ResourceStatus") == "DELETE_FAILED"}
                # LocalStack also deletes the resources whose condition is false, which it never
                # created; each such delete fails and marks the stack DELETE_FAILED while the
                # delete goes on. A failure of a resource the stack has is final.
                if failed and failed.isdisjoint(created):
                    phantoms |= failed
                    time.sleep(0.2)
                    continue
            if not status.endswith("_IN_PROGRESS"):
                break
            time.sleep(0.2)
        if status != "DELETE_COMPLETE":
            self.print_events(stack)
        if phantoms:
            gap(False, f"{stack}: a delete passes over the resources whose condition is false",
                f"LocalStack deletes {len(phantoms)} of them and says DELETE_FAILED until the delete ends")
        check(status == "DELETE_COMPLETE", f"{stack}: delete ends DELETE_COMPLETE (got {status}, {time.monotonic() - started:.0f} s)")


def main():
    os.environ.setdefault("AWS_DEFAULT_REGION", REGION)  # the SAM translator's pseudo parameters
    logging.getLogger("samtranslator").setLevel(logging.ERROR)
    began = time.monotonic()
    ls = LocalStack()
    proxy = None
    try:
        started = time.monotonic()
        ls.wait_ready()
        print(f"LocalStack ready on {ls.endpoint} in {time.monotonic() - started:.0f} s", flush=True)
        r = Rehearsal(ls)
        proxy = CfnProxy(ls.endpoint, r.s3, r.cfn)  # AWS's side of the transforms, for step 6
        r.upload_code()
        deliveries = Deliveries(check)
        rt = RoundTrip(ls, deliveries)

        # 0. The CDK construct: the example stack synthesized with the host's bootstraps and
        #    deployed through CloudFormation (first: it creates the queue `orders` itself).
        if cdk_stack.deploy(r, ls, check, ARCH, DIRECT_MAX_DELAY):
            enqueue, schedule = cdk_stack.functions_and_schedule(r)
            if check(enqueue and schedule, f"cdk: {cdk_stack.STACK} has an enqueue function and a schedule"):
                rt.round_trip(cdk_stack.STACK, enqueue, schedule, "orders", STORED_DELAY_S)
                through_aliases(rt, cdk_stack.STACK, enqueue, "orders", check)

        for q in ("orders", "billing", "refunds", "fresh"):
            rt.ensure_queue(q)

        # 6. The commands README gives a user, as typed (issue 81), in two threads beside steps
        #    1 to 5 (as_typed.start_lanes), the release's ones without cargo on the PATH.
        try:
            dist, version = from_dist.check_release(check, ARCH)
        except Exception as e:  # noqa: BLE001 (a broken release is a failed check; steps 1 to 5 go on)
            dist, version = None, None
            check(False, f"release: its files could not be read: {e!r}")
        typed, typed_deliveries = as_typed.start_lanes(r, ls, proxy, check, ARCH, STORED_DELAY_S, dist, version)

        # 1. Two stacks side by side, each delivering jobs through its own functions; prod runs
        #    two poller groups, each schedule its own half of the partitions, and encrypts its
        #    tables with a customer-managed key.
        prod = options.ProdOptions(r, check, gap)
        # dev names its tables by its stack (TableScope=stack: sqs-waiter-dev.orders), prod by its prefix.
        for stack, prefix, groups, extra in (("sqs-waiter-dev", DEV, 1, {"TableScope": "stack"}),
                                             ("sqs-waiter-prod", "prod-", 2, prod.parameters())):
            if not r.create(stack, ["orders", "billing"], prefix, groups=groups, extra=extra):
                return
            r.check_stack(stack, ["orders", "billing"], prefix)
            r.deliver(rt, stack, "orders")
        prod.check_keys("sqs-waiter-prod", ["orders", "billing"], "prod-")
        prod.check_tables("sqs-waiter-dev", [DEV + "orders", DEV + "billing"], None)
        midway.check_update_midway(ls.endpoint, "sqs-waiter-prod", check)
        # 1b. prod moves a queue from created to adopted in one update, with its two groups and
        #     its key, and a job goes through that queue.
        r.update("sqs-waiter-prod", ["orders"], "prod-", adopted=["billing"])
        r.check_stack("sqs-waiter-prod", ["orders"], "prod-", adopted=["billing"])
        prod.check_keys("sqs-waiter-prod", ["orders", "billing"], "prod-")
        r.deliver(rt, "sqs-waiter-prod", "billing")

        # 2. Add a queue: one new table; the others are the same tables, untouched.
        before = {q: (r.table(DEV + q) or {}).get("CreationDateTime") for q in ("orders", "billing")}
        #    With it, another account's role is granted the send alias of orders, which the stack
        #    has had since its create (CrossAccountGrants).
        r.update("sqs-waiter-dev", ["orders", "billing", "refunds"], DEV, grants=[CROSS_ACCOUNT_GRANT])
        cross_account_grant(r.lam, r.physical(r.resources("sqs-waiter-dev"), "EnqueueFunction"),
                            CROSS_ACCOUNT_GRANT, check)
        r.check_stack("sqs-waiter-dev", ["orders", "billing", "refunds"], DEV)
        r.deliver(rt, "sqs-waiter-dev", "refunds")
        for q, created in before.items():
            check(created is not None and (r.table(DEV + q) or {}).get("CreationDateTime") == created,
                  f"sqs-waiter-dev: table {DEV}{q} kept through the update (not replaced)")

        # 3. Take out a queue whose table holds a job, then add it back: the stack adopts the
        #    kept table (AdoptedQueueNames) and the job is delivered.
        held = rt.hold_job(r.physical(r.resources("sqs-waiter-dev"), "EnqueueFunction"), "billing",
                           "sqs-waiter-dev/billing kept through its removal", STORED_DELAY_S)
        r.update("sqs-waiter-dev", ["orders", "refunds"], DEV)
        check(rt.stored(r.ddb, DEV + "billing") == 1, "sqs-waiter-dev: queue billing taken out, its table and job kept")
        r.update("sqs-waiter-dev", ["orders", "refunds"], DEV, adopted=["billing"])
        r.check_stack("sqs-waiter-dev", ["orders", "refunds"], DEV, adopted=["billing"])
        r.deliver_held(rt, "sqs-waiter-dev", "billing", held)

        # 3b. Move a queue from QueueNames to AdoptedQueueNames in one update: its created-
        #     policies go and its adopted- ones come, and it keeps its rights (issue 37,
        #     defect 2); a job then goes through it.
        r.update("sqs-waiter-dev", ["orders"], DEV, adopted=["billing", "refunds"])
        r.check_stack("sqs-waiter-dev", ["orders"], DEV, adopted=["billing", "refunds"])
        r.deliver(rt, "sqs-waiter-dev", "refunds")

        # 4. Delete: the tables stay with their jobs, everything else goes; a new stack adopts
        #    all of them and delivers the jobs.
        res = r.resources("sqs-waiter-dev")
        held = rt.hold_job(r.physical(res, "EnqueueFunction"), "orders",
                           "sqs-waiter-dev/orders kept through the stack's delete", STORED_DELAY_S)
        r.delete("sqs-waiter-dev")
        check(all(r.table(DEV + q) is not None for q in ("orders", "billing", "refunds")),
              "after delete: the tables retained (DeletionPolicy Retain), created and adopted alike")
        check(rt.stored(r.ddb, DEV + "orders") == 1, f"after delete: the job stored in {DEV}orders kept")
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
        all_dev = ["orders", "billing", "refunds"]
        if r.create("sqs-waiter-dev", [], DEV, adopted=all_dev, extra={"TableScope": "stack"}):
            r.check_stack("sqs-waiter-dev", [], DEV, adopted=all_dev)
            r.deliver_held(rt, "sqs-waiter-dev", "orders", held)

        # 5. A failed first create: taken-orders belongs to nobody's stack, so this create fails
        #    on it. The table it did create (taken-fresh) is kept (Retain), and the retried
        #    create adopts it.
        r.ddb.create_table(TableName="taken-orders", BillingMode="PAY_PER_REQUEST",
                           AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "S"}],
                           KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}])
        r.cfn.create_stack(StackName="sqs-waiter-retry", **r.template(["fresh", "orders"]),
                           Parameters=r.params(["fresh", "orders"], "taken-"), Capabilities=r.CAPS)
        status = r.wait("sqs-waiter-retry", "ROLLBACK_COMPLETE")
        check(status in ("ROLLBACK_COMPLETE", "CREATE_FAILED"), f"failed first create: the create fails on taken-orders (got {status})")
        r.delete("sqs-waiter-retry")
        check(r.table("taken-fresh") is not None, "failed first create: the table it created (taken-fresh) kept for the retry")
        check(r.table("taken-orders") is not None, "failed first create: the table it did not own (taken-orders) untouched")
        if r.create("sqs-waiter-retry", [], "taken-", adopted=["fresh"]):
            r.check_stack("sqs-waiter-retry", [], "taken-", adopted=["fresh"])
            r.deliver(rt, "sqs-waiter-retry", "fresh")

        for t in typed:  # 6, beside steps 1 to 5
            t.join()
        check(not proxy.errors, f"the CloudFormation proxy expanded every change set (errors: {proxy.errors})")
        for d in typed_deliveries:
            deliveries.add(d)

        print(f"rehearsal: {deliveries.delivered} of {deliveries.expected} jobs delivered through the deployed functions", flush=True)
        check(deliveries.expected > 0 and deliveries.delivered == deliveries.expected,
              "every job sent through the deployed functions delivered, on time and never early")
    finally:
        # The as-typed steps end before their LocalStack does, whichever way main ended.
        for t in threading.enumerate():
            if t.name == "as-typed":
                t.join()
        if proxy:
            proxy.stop()
        Consumer.stop_all()
        ls.stop()
        if failures:
            print(f"LocalStack log kept: {ls.log_path}")
            # CI keeps only what is printed: LocalStack's own warnings name a failed resource.
            warnings = [l for l in ls.log_path.read_text(errors="replace").splitlines()
                        if " WARN " in l or " ERROR " in l]
            for line in warnings[-40:]:
                print("     localstack: " + line[:400])
        else:
            shutil.rmtree(ls.fs, ignore_errors=True)
    if failures:
        print(f"\n{len(failures)} check(s) failed:")
        for f in failures:
            print("  - " + f)
        sys.exit(1)
    print(f"\nrehearsal: every check holds in {time.monotonic() - began:.0f} s "
          f"({len(gaps)} LocalStack gaps listed above, checked by tests/template)")


if __name__ == "__main__":
    main()
