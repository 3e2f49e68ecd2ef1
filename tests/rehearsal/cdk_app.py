"""A fresh CDK app that installs the release's CDK package from its tarball (issue 81).

As README says: `npm install ./dist/sqs-waiter-infra-*.tgz aws-cdk-lib@… constructs@… aws-cdk@…`
(the registry only), an app of a user's own that uses `SqsWaiter` with no code given, and
`npx cdk synth`. Checked: the package brings no second copy of aws-cdk-lib or constructs and
pulls in neither cargo-lambda-cdk nor cdk-nag; the synthesized functions' code is the release's
zips. Then its stack is deployed on LocalStack from that synth's output and jobs go through it.

`cdk deploy` itself is stood in for (cdk_stack.publish_and_create): it needs `cdk bootstrap`'s
toolkit stack and virtual-hosted S3 addressing, which LocalStack here cannot serve without DNS.
"""

import json
import re
import subprocess
import tempfile
from pathlib import Path

from cdk_stack import publish_and_create, functions_and_schedule
from as_typed import NICE
from derive import ROOT

STACK = "MyWaiterApp"
QUEUE = "cdk-app-jobs"
APP = """import { App, Duration, Stack } from "aws-cdk-lib";
import * as lambda from "aws-cdk-lib/aws-lambda";
import * as sqs from "aws-cdk-lib/aws-sqs";
import { SqsWaiter } from "sqs-waiter-infra";

const app = new App();
const stack = new Stack(app, "%(stack)s");
const jobs = new sqs.Queue(stack, "Jobs", { queueName: "%(queue)s" });
// No code given: the package's own zips for this architecture.
new SqsWaiter(stack, "Waiter", {
  queues: [jobs],
  architecture: lambda.Architecture.%(arch)s,
  directMaxDelay: Duration.seconds(0),
  tablePrefix: "cdk-app-",
});
"""


def readme_npm_install():
    found = re.search(r"^(npm install \./dist/sqs-waiter-infra-\S+\.tgz .*)$", (ROOT / "README.md").read_text(), re.M)
    if not found:
        raise ValueError("README.md has no `npm install ./dist/sqs-waiter-infra-….tgz …` line")
    return found.group(1).split("#")[0].strip()


def deploy_app(r, ls, rt, check, dist, arch, stored_delay_s, env):
    with tempfile.TemporaryDirectory(prefix="sqs-waiter-cdk-app-") as home:
        home = Path(home)
        # The user's directory: the release beside the app.
        (home / "dist").symlink_to(dist.resolve())
        (home / "package.json").write_text(json.dumps({"name": "my-waiter-app", "private": True, "type": "module"}))
        (home / "cdk.json").write_text(json.dumps({"app": "node app.mjs"}))
        (home / "app.mjs").write_text(APP % {"stack": STACK, "queue": QUEUE, "arch": "X86_64" if arch == "x86_64" else "ARM_64"})
        command = readme_npm_install()
        print(f"     $ {command}", flush=True)
        run = subprocess.run([*NICE, "bash", "-c", command + " --no-audit --no-fund --silent"], cwd=home, env=env,
                             capture_output=True, text=True, timeout=600)
        if not check(run.returncode == 0, f"cdk app: `{command}` (exit {run.returncode}: {run.stderr.strip()[-800:]})"):
            return
        modules = home / "node_modules"
        # What the package asks of the app: peers only (npm would dedupe ordinary dependencies at
        # the app's versions, so the tree alone proves nothing).
        manifest = json.loads((modules / "sqs-waiter-infra/package.json").read_text())
        peers = manifest.get("peerDependencies", {})
        check(not manifest.get("dependencies") and {"aws-cdk-lib", "constructs"} <= set(peers)
              and manifest.get("peerDependenciesMeta", {}).get("cargo-lambda-cdk", {}).get("optional") is True
              and "cdk-nag" not in peers,
              f"cdk app: the package's aws-cdk-lib and constructs are peers, cargo-lambda-cdk an optional one, "
              f"and it depends on nothing (got dependencies {manifest.get('dependencies')}, peers {peers})")
        nested = sorted(str(p.relative_to(modules)) for p in (modules / "sqs-waiter-infra").rglob("node_modules/*")
                        if p.is_dir() and p.parent.name == "node_modules")
        check(not nested, f"cdk app: the package brings no copy of its own of anything, aws-cdk-lib and constructs "
                          f"are the app's (got {nested})")
        for unused in ("cargo-lambda-cdk", "cdk-nag"):
            check(not (modules / unused).exists(), f"cdk app: installing the package does not pull in {unused}")
        print("     $ npx cdk synth --quiet", flush=True)
        run = subprocess.run([*NICE, "npx", "cdk", "synth", "--quiet"], cwd=home, env=env, capture_output=True, text=True,
                             timeout=600)
        if not check(run.returncode == 0, f"cdk app: `npx cdk synth` (exit {run.returncode}: {run.stderr.strip()[-1500:]})"):
            return
        out = home / "cdk.out"
        assets = json.loads((out / f"{STACK}.assets.json").read_text())["files"]
        shipped = {p.read_bytes() for p in dist.glob(f"*-{arch}.zip")}
        code = [a for a in assets.values() if a["source"]["path"].endswith(".zip")]
        check(len(code) == 2 and all((out / a["source"]["path"]).read_bytes() in shipped for a in code),
              f"cdk app: both functions' code is the release's {arch} zips ({[a['source']['path'] for a in code]})")
        if not publish_and_create(r, ls, check, out, STACK):
            return
    enqueue, schedule = functions_and_schedule(r, STACK)
    if check(enqueue and schedule, f"cdk app: {STACK} has an enqueue function and a schedule"):
        rt.round_trip(STACK, enqueue, schedule, QUEUE, stored_delay_s)
