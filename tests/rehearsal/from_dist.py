"""A release from `make dist` (issue 74), deployed on LocalStack from its files alone: no cargo
on the PATH, nothing read but the release directory. Its files are checked against SHA256SUMS,
its CLI names its version, its CDK package loads and finds its zips, and 30 stored jobs go
through the functions its template deploys. The template goes through the rehearsal's own loop
expansion and SAM transform (derive.py), as every rehearsed stack does: `sam deploy -t` itself
is not run here. `make rehearse` packages the release with `scripts/dist.py --host-debug` (this
machine's architecture, debug builds) into target/dist-debug; REHEARSE_DIST=dist rehearses the
one `make dist` wrote."""

import hashlib
import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import uuid
from pathlib import Path

from derive import BUCKET, ROOT
from roundtrip import epoch

STACK = "sqs-waiter-release"
JOBS = 30


def without_cargo():
    """The PATH without any directory that holds cargo (rustup's ~/.cargo/bin, say)."""
    os.environ["PATH"] = os.pathsep.join(
        p for p in os.environ.get("PATH", "").split(os.pathsep) if p and not (Path(p) / "cargo").exists())
    return shutil.which("cargo") is None


def deploy_release(r, rt, check, arch, stored_delay_s):
    # make rehearse packages this machine's debug builds apart from a user's dist/.
    dist = Path(os.environ.get("REHEARSE_DIST") or ROOT / "target/dist-debug")
    sums = dist / "SHA256SUMS"
    if not check(sums.is_file(), f"release: {dist} holds a release (make dist, or scripts/dist.py --host-debug)"):
        return
    check(without_cargo(), "release: cargo is not on the PATH")
    listed = dict(reversed(line.split("  ", 1)) for line in sums.read_text().splitlines() if line)
    for name, digest in listed.items():
        check(hashlib.sha256((dist / name).read_bytes()).hexdigest() == digest, f"release: {name} matches SHA256SUMS")
    version = re.search(r"sqs-waiter-([0-9][^-]*)-enqueue-", " ".join(listed)).group(1)
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(dist / f"sqs-waiter-{version}-linux-{arch}.tar.gz") as t:
            t.extractall(tmp, filter="data")
        out = subprocess.run([str(Path(tmp) / "sqs-waiter"), "--version"], capture_output=True, text=True)
        check(out.returncode == 0 and version in out.stdout, f"release: its CLI says {version} ({out.stdout.strip()})")
    cdk_package(dist, listed, version, arch, check)
    for name in listed:
        if name.endswith(f"-{arch}.zip"):
            r.s3.put_object(Bucket=BUCKET, Key=name, Body=(dist / name).read_bytes())
    template = dist / f"template-{arch}.yaml"
    if not r.create(STACK, ["release"], "release-", source=template):
        return
    res = r.resources(STACK)
    outputs = {o["OutputKey"]: o["OutputValue"] for o in r.cfn.describe_stacks(StackName=STACK)["Stacks"][0].get("Outputs", [])}
    check(outputs.get("Version") == version, f"release: the stack outputs Version {version} (got {outputs.get('Version')})")
    enqueue = r.physical(res, "EnqueueFunction")
    schedule = r.schedule(STACK, res)
    if not (enqueue and schedule):
        return
    rt.ensure_queue("release")
    jobs = [{"queue": "release", "job_id": f"release-{i}-{uuid.uuid4().hex[:6]}", "message_body": f"release/{i}/{uuid.uuid4()}",
             "delay_seconds": stored_delay_s} for i in range(JOBS)]
    error, reply = rt.invoke(enqueue, {"jobs": jobs})
    results = reply.get("results", []) if isinstance(reply, dict) else []
    check(error is None and [x.get("status") for x in results] == ["scheduled"] * JOBS,
          f"release: its enqueue stores {JOBS} jobs (got {error}: {json.dumps(reply)[:300]})")
    expected = {j["message_body"]: (epoch(x["perform_at"]), f"release job {j['job_id']}")
                for j, x in zip(jobs, results) if "perform_at" in x}
    rt.hand_over_and_receive(f"release {version}", schedule, "release", expected, len(expected))
    r.delete(STACK)


def cdk_package(dist, listed, version, arch, check):
    """The CDK package, installed as an app would: its modules load, and it finds its own zip."""
    package = next((dist / name for name in listed if name.startswith("sqs-waiter-infra-")), None)
    if not check(package is not None, "release: it holds the CDK package"):
        return
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(package) as t:
            t.extractall(tmp, filter="data")
        root = Path(tmp) / "package"
        # Its dependencies (aws-cdk-lib, constructs) as the app's installed ones.
        (root / "node_modules").symlink_to(ROOT / "infra/node_modules")
        architecture = "X86_64" if arch == "x86_64" else "ARM_64"
        script = ("import { releaseCode } from './lib/code.js'; import { SqsWaiter } from './lib/sqs-waiter.js';"
                  "import * as lambda from 'aws-cdk-lib/aws-lambda';"
                  f"const code = releaseCode('enqueue', lambda.Architecture.{architecture});"
                  "console.log(typeof SqsWaiter, code ? code.path : 'none');")
        out = subprocess.run(["node", "--input-type=module", "-e", script], cwd=root, capture_output=True, text=True)
        check(out.returncode == 0 and out.stdout.strip().startswith("function ")
              and out.stdout.strip().endswith(f"sqs-waiter-{version}-enqueue-{arch}.zip"),
              f"release: the CDK package loads and deploys its own zip ({out.stdout.strip()} {out.stderr.strip()[-300:]})")
