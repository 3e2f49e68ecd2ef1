"""The deploy's parameters checked against each other, as CloudFormation cannot (its Rules
compare no numbers), before `sam build`. A parameter's value is what `make deploy` sends
(PARAMS), else the stack's current one (`sam deploy` sends a parameter left out as
UsePreviousValue), else template.yaml's default.

- PollerTimeout is at least FifoHold + 5: a run holds FIFO jobs up to FifoHold, and Lambda
  stops it at its timeout.
- PollerReservedConcurrency (unless 0, none) is at least PollerGroups: each group's schedule
  invokes the poller every minute, and EventBridge Scheduler drops an invocation it could not
  make within 60 s (the schedules' MaximumEventAgeInSeconds).
- WarmWriteUnits and WarmReadUnits never go below the stack's current values: DynamoDB cannot
  lower a table's warm throughput, so such an update fails (and every later one with it).
- MaxReadCapacity and MaxWriteCapacity (autoscaling, unless 0) need BillingMode PROVISIONED
  and are at least ReadCapacity and WriteCapacity, the autoscaling minimum.
- IndexProjection never changes on a stack: CloudFormation cannot change a global secondary
  index's projection ("Cannot update GSI's properties other than Provisioned Throughput..."),
  and a stack created before the parameter has tables whose index projects ALL.
"""

import shlex

# config::FIFO_HOLD_MARGIN in the waiter crate; infra/lib/checks.ts POLLER_MARGIN_S.
FIFO_HOLD_MARGIN_S = 5
CHECKED = ("PollerTimeout", "FifoHold", "PollerGroups", "PollerReservedConcurrency", "BillingMode",
           "ReadCapacity", "WriteCapacity", "MaxReadCapacity", "MaxWriteCapacity")


def parse_overrides(params):
    """PARAMS as make passes it ("K=V K2='v 2'"): {K: V}."""
    out = {}
    for word in shlex.split(params or ""):
        key, sep, value = word.partition("=")
        if sep:
            out[key] = value
    return out


def current_parameters(stack, region=None):
    """The stack's current parameter values, {} when it does not exist; None (with why) when
    they cannot be read (no credentials, no region, no network)."""
    try:
        import boto3
        import botocore.exceptions

        cfn = boto3.client("cloudformation", region_name=region)
        try:
            found = cfn.describe_stacks(StackName=stack)["Stacks"]
        except botocore.exceptions.ClientError as e:
            if "does not exist" in str(e):
                return {}, None
            raise
        return {p["ParameterKey"]: p.get("ParameterValue", "") for p in found[0].get("Parameters", [])}, None
    except Exception as e:  # noqa: BLE001 - any failure only means the defaults are used
        return None, f"{type(e).__name__}: {e}"


def current_template(stack, region=None):
    """The stack's template as CloudFormation processed it (loops and the SAM transform
    expanded), or None with why it could not be read."""
    try:
        import json

        import boto3

        cfn = boto3.client("cloudformation", region_name=region)
        body = cfn.get_template(StackName=stack, TemplateStage="Processed")["TemplateBody"]
        return (json.loads(body) if isinstance(body, str) else json.loads(json.dumps(body))), None
    except Exception as e:  # noqa: BLE001 - any failure only means the midway check is skipped
        return None, f"{type(e).__name__}: {e}"


def effective(overrides, current, template):
    """Each checked parameter's value as the deploy will use it."""
    defaults = {k: str(v.get("Default", "")) for k, v in template["Parameters"].items()}
    return {k: overrides.get(k, (current or {}).get(k, defaults.get(k, ""))) for k in CHECKED}


def lowered(overrides, current):
    """Warm throughput asked below what the stack's tables have: DynamoDB refuses to decrease it.
    Only where both the current and the new deploy set it (WarmWriteUnits not 0); 0 leaves the
    tables as they are."""
    out = []
    current = current or {}
    now_on, next_on = current.get("WarmWriteUnits", "0") != "0", overrides.get("WarmWriteUnits") != "0"
    for key in ("WarmWriteUnits", "WarmReadUnits"):
        try:
            new, old = int(overrides[key]), int(current[key])
        except (KeyError, ValueError):
            continue
        if now_on and next_on and new < old:
            out.append(f"{key} ({new}) is below the stack's current {old}: DynamoDB cannot lower a table's warm "
                       "throughput, so the update would fail; leave it out (it keeps the current value) or raise it")
    return out


def projection_changed(overrides, current):
    """IndexProjection other than what the stack's created tables have. A stack without the
    parameter predates it: its tables project ALL. A new stack (current None or {}) may choose."""
    if not current:
        return []
    now = current.get("IndexProjection", "ALL")
    # Left out: UsePreviousValue where the stack has it, else the template's default.
    new = overrides.get("IndexProjection", current.get("IndexProjection", "INCLUDE"))
    if new == now:
        return []
    return [f"IndexProjection ({new}) differs from the projection of this stack's tables' index ({now}): "
            "CloudFormation cannot change it, so the update would fail and roll back; deploy with "
            f"IndexProjection={now}, or move the tables as docs/tables.md \"Index projection\" says"]


def scope_changed(overrides, current):
    """TableScope other than the stack's: it names the tables, so a change would make
    CloudFormation create new, empty tables and point the functions at them, while the old ones
    (kept: DeletionPolicy Retain) hold the stored jobs. A stack without the parameter predates
    it: prefix. A new stack (current None or {}) may choose."""
    if not current:
        return []
    now = current.get("TableScope", "prefix")
    new = overrides.get("TableScope", now)
    if new == now:
        return []
    return [f"TableScope ({new}) differs from this stack's ({now}): it would rename the stack's tables, and the "
            "jobs stored in the current ones would wait there undelivered; keep TableScope={now}, or move to a "
            "new stack as docs/tables.md \"Table scope\" says"]


def problems(values):
    out = []
    try:
        timeout, hold = int(values["PollerTimeout"]), int(values["FifoHold"])
        groups, reserved = int(values["PollerGroups"]), int(values["PollerReservedConcurrency"])
    except ValueError:
        return out  # Not whole numbers: CloudFormation's own MinValue/AllowedValues refuse them.
    for kind in ("Read", "Write"):
        try:
            low, high = int(values.get(f"{kind}Capacity", "5")), int(values.get(f"Max{kind}Capacity", "0"))
        except ValueError:
            continue
        if high == 0:
            continue
        if values.get("BillingMode") != "PROVISIONED":
            out.append(f"Max{kind}Capacity ({high}) needs BillingMode PROVISIONED: on demand, DynamoDB scales "
                       "by itself and there is no capacity to scale")
        elif high < low:
            out.append(f"Max{kind}Capacity ({high}) must be at least {kind}Capacity ({low}), autoscaling's minimum")
    if timeout < hold + FIFO_HOLD_MARGIN_S:
        out.append(f"PollerTimeout ({timeout}) must be at least FifoHold + {FIFO_HOLD_MARGIN_S} "
                   f"({hold + FIFO_HOLD_MARGIN_S}): Lambda would stop a run holding FIFO jobs")
    if reserved != 0 and reserved < groups:
        out.append(f"PollerReservedConcurrency ({reserved}) must be at least PollerGroups ({groups}), or 0 "
                   "(none): each group's run needs its own concurrent execution, and a throttled "
                   "schedule's invocation is dropped after 60 s")
    return out
