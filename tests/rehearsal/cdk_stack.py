"""The CDK construct's round trip for the deploy rehearsal (tests/rehearsal/rehearse.py).

`cdk synth` of the example stack (infra/bin/app.ts) with the host's bootstraps as its function
code, its assets published as `cdk deploy` would (zipped into the bootstrap bucket, under the
keys the asset manifest names), the bootstrap version parameter `cdk bootstrap` would leave,
and the synthesized template deployed through LocalStack's CloudFormation. Then jobs through
its functions, as for the SAM stacks.
"""

import json
import os
import subprocess
import tempfile
from pathlib import Path

from derive import stripped_bootstrap, zipped_dir
from roundtrip import schedule_ref

ROOT = Path(__file__).resolve().parents[2]
STACK = "SqsWaiterExample"
ACCOUNT = "000000000000"
QUALIFIER = "hnb659fds"  # the default synthesizer's


def synth(tmp, arch, direct_max_delay):
    """`cdk synth` of the example stack with these bootstraps; returns cdk.out's path."""
    lambda_dir = Path(tmp) / "lambda"
    for binary in ("enqueue", "poller"):
        (lambda_dir / binary).mkdir(parents=True)
        stripped_bootstrap(binary, lambda_dir / binary / "bootstrap")
    out = Path(tmp) / "cdk.out"
    run = subprocess.run(
        ["npx", "cdk", "synth", "--quiet", "-c", f"lambdaDir={lambda_dir}", "-c", f"architecture={arch}",
         "-c", f"directMaxDelay={direct_max_delay}", "-o", str(out)],
        cwd=ROOT / "infra", capture_output=True, text=True, timeout=300,
        env=dict(os.environ, CDK_DISABLE_VERSION_CHECK="1"),
    )
    if run.returncode != 0:
        raise RuntimeError(f"cdk synth failed: {run.stdout[-2000:]} {run.stderr[-2000:]}")
    return out


def deploy(r, ls, check, arch, direct_max_delay):
    """Synthesizes and deploys the example stack; returns True when it is up."""
    with tempfile.TemporaryDirectory(prefix="sqs-waiter-cdk-") as tmp:
        try:
            out = synth(tmp, arch, direct_max_delay)
        except RuntimeError as e:
            check(False, f"cdk: {e}")
            return False
        check(True, f"cdk: synth of {STACK} with the host's bootstraps ({arch}, directMaxDelay {direct_max_delay})")
        return publish_and_create(r, ls, check, out, STACK)


def publish_and_create(r, ls, check, out, stack):
    """What `cdk deploy` does with `cdk synth`'s output (cdk.out): the file assets zipped into
    the bootstrap bucket under the keys the asset manifest names, the bootstrap version
    parameter `cdk bootstrap` would leave, and the template created through CloudFormation.
    Returns True when the stack is up."""
    region = "us-east-1"
    bucket = f"cdk-{QUALIFIER}-assets-{ACCOUNT}-{region}"
    try:
        r.s3.create_bucket(Bucket=bucket)
    except r.s3.exceptions.BucketAlreadyOwnedByYou:
        pass  # the bootstrap bucket of an earlier app in this account
    manifest = json.loads((out / f"{stack}.assets.json").read_text())
    for asset in manifest["files"].values():
        source = out / asset["source"]["path"]
        for dest in asset["destinations"].values():
            name = dest["bucketName"].replace("${AWS::AccountId}", ACCOUNT).replace("${AWS::Region}", region)
            body = zipped_dir(source) if asset["source"].get("packaging") == "zip" else source.read_bytes()
            r.s3.put_object(Bucket=name, Key=dest["objectKey"], Body=body)
    ls.client("ssm").put_parameter(Name=f"/cdk-bootstrap/{QUALIFIER}/version", Value="30", Type="String", Overwrite=True)
    template = (out / f"{stack}.template.json").read_text()
    r.cfn.create_stack(StackName=stack, TemplateBody=template, Capabilities=r.CAPS)
    status = r.wait(stack, "CREATE_COMPLETE")
    return check(status == "CREATE_COMPLETE", f"cdk: {stack} deployed through CloudFormation (got {status})")


def functions_and_schedule(r, stack=STACK):
    res = r.resources(stack)
    by_type = {}
    for logical, summary in res.items():
        by_type.setdefault(summary["ResourceType"], []).append((logical, summary["PhysicalResourceId"]))
    enqueue = [p for logical, p in by_type.get("AWS::Lambda::Function", []) if logical.startswith("WaiterEnqueue")]
    groups = [p for _, p in by_type.get("AWS::Scheduler::ScheduleGroup", [])]
    schedules = [schedule_ref(groups[0] if groups else None, p) for _, p in by_type.get("AWS::Scheduler::Schedule", [])]
    return (enqueue[0] if enqueue else None), (schedules[0] if schedules else None)
