"""The deploy commands README and docs/deploy.md give a user, run as written (issue 81).

Each step runs one command a user types, from the directory a user would be in, against the
rehearsal's LocalStack, and then checks what the user would look at next: the command's exit
status and its last words, the change set it made (capabilities, parameters, the template SAM
uploaded), the code it uploaded, the stack's outputs, and jobs going through the functions it
deployed.

- `make deploy QUEUES=… RELEASE=<release> …` from the checkout (the release `make rehearse` packs);
- README's plain `sam deploy -t dist/template-ARCH.yaml --language-extensions …` line, from a
  directory that holds only the release;
- `make deploy QUEUES=… …` from source (`sam build`, then `sam deploy`);
- `sam delete --stack-name …` after each.

Every prompt is answered as a user would (`y` to the change set and to each delete question).
What stands in, and only that (docs/deploy.md "What stands in for what"):
- CreateChangeSet's transforms (cfn_proxy.py): LocalStack's CloudFormation cannot expand
  `Fn::ForEach` or update a stack that carries the SAM transform, so the proxy in front of it
  expands the template SAM uploaded, for the change set's parameters, as AWS's CloudFormation
  does on its side; the rest of SAM CLI's calls reach LocalStack unchanged;
- in the source build, `cargo lambda build --release` (5.5 minutes a cold build of the SDK
  stack on 2 cores): a `cargo` on the PATH that copies this machine's debug build of the binary
  SAM asks for where cargo-lambda would write it, and records the command;
- the functions run as host processes, and the schedule is fired by the rehearsal, as in every
  rehearsed stack.
The values a step changes in README's command are named there: the architecture (this host's,
whose binaries the functions run), the stack and the queue (each step its own), and
`DirectMaxDelay=0` in PARAMS where the step stores jobs a few seconds ahead.
"""

import io
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import threading
import time
import uuid
import zipfile
from pathlib import Path

from derive import REGION, ROOT
from roundtrip import epoch

SAM_CAPABILITIES = ["CAPABILITY_IAM", "CAPABILITY_AUTO_EXPAND"]
COMMAND_TIMEOUT_S = 600
# How many questions `sam deploy` (the change set) and `sam delete` (the stack, the template in
# S3) ask at most; each is answered `y`.
ANSWERS = "y\n" * 4
# The cargo a user's `make deploy` from source would run (before anything takes cargo off the
# rehearsal's PATH); the stand-in passes every other command to it.
REAL_CARGO = shutil.which("cargo")


def user_env(base, ls, proxy, path_first=()):
    """A user's shell (from `base`, the rehearsal's environment as it was before its threads
    started) with credentials for the account (LocalStack's) and its endpoint."""
    env = {k: v for k, v in base.items() if not k.startswith(("AWS_", "MAKE", "MFLAGS"))}
    env.update(AWS_ACCESS_KEY_ID="test", AWS_SECRET_ACCESS_KEY="test", AWS_REGION=REGION, AWS_DEFAULT_REGION=REGION,
               AWS_ENDPOINT_URL=ls.endpoint, AWS_ENDPOINT_URL_CLOUDFORMATION=proxy.url, SAM_CLI_TELEMETRY="0",
               PATH=os.pathsep.join([*map(str, path_first), str(ROOT / ".venv/bin"), env.get("PATH", "")]))
    return env


# The user's commands (SAM CLI, make's checks, npm, cdk synth) run at a lower CPU priority than
# LocalStack and the deployed functions: they run beside steps 1 to 5, whose round trips time
# each job's arrival, and on 2 cores with one kept busy they starved a poller run of its
# partition's time (a loaded `.ci/run`, measured). The command itself is unchanged.
NICE = ["nice", "-n", "10"]


def typed(command, cwd, env):
    """`command` as a user types it into a shell in `cwd`, each prompt answered `y`."""
    print(f"     $ {command}", flush=True)
    try:
        run = subprocess.run([*NICE, "bash", "-c", command], cwd=cwd, env=env, input=ANSWERS, capture_output=True,
                             text=True, timeout=COMMAND_TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        return 124, f"timed out after {COMMAND_TIMEOUT_S} s: {e.stdout or ''} {e.stderr or ''}"
    return run.returncode, run.stdout + run.stderr


def readme_sam_deploy():
    """README's plain `sam deploy -t dist/template-…` line, continuation joined."""
    text = (ROOT / "README.md").read_text()
    found = re.search(r"^(sam deploy -t dist/template-\S+\.yaml(?:.*\\\n)*.*)$", text, re.M)
    if not found:
        raise ValueError("README.md has no `sam deploy -t dist/template-….yaml` line")
    return re.sub(r"\s*\\\n\s*", " ", found.group(1)).strip()


class AsTyped:
    def __init__(self, r, rt, ls, proxy, check, arch, stored_delay_s, env):
        self.r, self.rt, self.ls, self.proxy, self.check = r, rt, ls, proxy, check
        self.arch, self.stored_delay_s, self.env = arch, stored_delay_s, env

    def shell(self, path_first=()):
        return user_env(self.env, self.ls, self.proxy, path_first)

    def deployed(self, stack, command, rc, out, want_params, code):
        """What the user looks at after `sam deploy`: its exit and last words, the change set it
        made, the code it uploaded (`code`: {function logical id: the bytes of its bootstrap}),
        and the stack's outputs. Returns the outputs, or None."""
        tail = out.strip()[-1500:]
        ok = self.check(rc == 0 and f"Successfully created/updated stack - {stack}" in out,
                        f"as typed: `{command}` deploys {stack} (exit {rc}; {tail if rc else 'ok'})")
        # Only samconfig.toml's confirm_changeset asks this: the proof that SAM CLI read it.
        self.check("Deploy this changeset?" in out,
                   f"as typed: {stack}: SAM CLI read samconfig.toml (it asked to confirm the change set)")
        sets = [c for c in self.proxy.changesets if c["stack"] == stack]
        if not self.check(sets, f"as typed: {stack}: SAM CLI created a change set"):
            return None
        cs = sets[-1]
        self.check(cs["capabilities"] == SAM_CAPABILITIES,
                   f"as typed: {stack}: the change set has samconfig.toml's capabilities (got {cs['capabilities']})")
        got = {k: cs["parameters"].get(k) for k in want_params}
        self.check(got == want_params, f"as typed: {stack}: the change set's parameters {want_params} (got {cs['parameters']})")
        self.check(bool(cs["template_url"]), f"as typed: {stack}: the template went through S3 (resolve_s3)")
        resources = cs["template"]["Resources"]
        for logical, bootstrap in code.items():
            uri = resources.get(logical, {}).get("Properties", {}).get("CodeUri", "")
            uploaded = self.s3_bytes(uri)
            self.check(uploaded is not None and unzipped_bootstrap(uploaded) == bootstrap,
                       f"as typed: {stack}: {logical}'s uploaded code ({uri}) is the bootstrap it should deploy")
        if not ok:
            return None
        stacks = self.r.cfn.describe_stacks(StackName=stack)["Stacks"]
        return {o["OutputKey"]: o["OutputValue"] for o in stacks[0].get("Outputs", [])}

    def s3_bytes(self, uri):
        if not uri.startswith("s3://"):
            return None
        bucket, _, key = uri[len("s3://"):].partition("/")
        try:
            return self.r.s3.get_object(Bucket=bucket, Key=key)["Body"].read()
        except self.r.s3.exceptions.ClientError:
            return None

    def jobs_through(self, stack, outputs, queue, stored):
        """The user's next step: jobs through the deployed `enqueue` (its output), handed over
        by the stack's schedule."""
        enqueue = outputs.get("EnqueueFunctionName")
        schedule = self.r.schedule(stack, self.r.resources(stack))
        if not (self.check(enqueue, f"as typed: {stack} outputs EnqueueFunctionName") and schedule):
            return
        self.rt.ensure_queue(queue)
        if stored:
            self.rt.round_trip(f"as typed {stack}", enqueue, schedule, queue, self.stored_delay_s)
            return
        # DirectMaxDelay at its default (900): a job due now goes straight to SQS.
        expected = {}
        for how, send in (("boto3", self.rt.enqueue_boto3), ("cli", self.rt.enqueue_cli)):
            body = f"as typed {stack}/{how}/{uuid.uuid4()}"
            reply = send(enqueue, queue, body, 0)
            self.check(reply.get("status") == "sent", f"as typed: {stack}: the {how} job due now goes straight to SQS")
            if "perform_at" in reply:
                expected[body] = (epoch(reply["perform_at"]), f"as typed {stack} {how} direct")
        self.rt.receive(queue, expected)

    def deleted(self, stack, tables, cwd, env):
        """`sam delete --stack-name STACK`, as docs/deploy.md gives it: the stack goes, its
        tables stay."""
        command = f"sam delete --stack-name {stack}"
        rc, out = typed(command, cwd, env)
        self.check(rc == 0 and "Deleted successfully" in out, f"as typed: `{command}` (exit {rc}; {out.strip()[-800:]})")
        try:
            status = self.r.cfn.describe_stacks(StackName=stack)["Stacks"][0]["StackStatus"]
        except self.r.cfn.exceptions.ClientError:
            status = "gone"
        self.check(status in ("gone", "DELETE_COMPLETE"), f"as typed: {stack} is deleted (got {status})")
        for t in tables:
            self.check(self.r.table(t) is not None, f"as typed: after sam delete, table {t} is kept")
            # What docs/deploy.md tells a user to do with a kept table they no longer want.
            self.r.ddb.delete_table(TableName=t)

    def release_by_make(self, dist, version, zips):
        """`make deploy RELEASE=`, from the checkout, with any cargo a tripwire."""
        stack, queue = "sqs-waiter-typed-release", "typed-release"
        command = (f"make deploy QUEUES={queue} RELEASE={shlex.quote(str(dist))} ARCH={self.arch} STACK={stack} "
                   f'PARAMS="DirectMaxDelay=0 TablePrefix=typed-"')
        with tempfile.TemporaryDirectory(prefix="sqs-waiter-no-cargo-") as tmp:
            env = self.shell([cargo_tripwire(Path(tmp))])
            rc, out = typed(command, ROOT, env)
            self.no_cargo(tmp, command)
        outputs = self.deployed(stack, command, rc, out,
                                {"QueueNames": queue, "AdoptedQueueNames": "", "Architecture": self.arch,
                                 "DirectMaxDelay": "0", "TablePrefix": "typed-"},
                                {"EnqueueFunction": zips["enqueue"], "PollerFunction": zips["poller"]})
        if outputs is not None:
            self.check(outputs.get("Version") == version,
                       f"as typed: {stack} outputs Version {version} (got {outputs.get('Version')})")
            self.jobs_through(stack, outputs, queue, stored=True)
        self.deleted(stack, [f"typed-{queue}"], ROOT, env)

    def no_cargo(self, tmp, command):
        called = (Path(tmp) / "cargo.log").read_text() if (Path(tmp) / "cargo.log").exists() else ""
        self.check(not called, f"as typed: `{command}` runs no cargo (a release needs no Rust toolchain; got {called.strip()})")

    def release_plain(self, dist, zips):
        """README's plain line, from a directory with nothing but the release in `dist/`."""
        stack, queue = "sqs-waiter-typed-plain", "typed-plain"
        line = readme_sam_deploy()
        command = line.replace("arm64", self.arch).replace("--stack-name sqs-waiter", f"--stack-name {stack}") \
            .replace("QueueNames=orders", f"QueueNames={queue}")
        with tempfile.TemporaryDirectory(prefix="sqs-waiter-user-") as home:
            shutil.copytree(dist, Path(home) / "dist")
            env = self.shell([cargo_tripwire(Path(home) / "tripwire")])
            rc, out = typed(command, home, env)
            self.no_cargo(Path(home) / "tripwire", command)
            outputs = self.deployed(stack, command, rc, out, {"QueueNames": queue},
                                    {"EnqueueFunction": zips["enqueue"], "PollerFunction": zips["poller"]})
            if outputs is not None:
                self.jobs_through(stack, outputs, queue, stored=False)
            self.deleted(stack, [f"sqs-waiter-{queue}"], home, env)

    def from_source(self):
        stack, queue = "sqs-waiter-typed-source", "typed-source"
        command = (f"make deploy QUEUES={queue} ARCH={self.arch} STACK={stack} "
                   f'PARAMS="DirectMaxDelay=0 TablePrefix=typed-"')
        with tempfile.TemporaryDirectory(prefix="sqs-waiter-cargo-") as tmp:
            record = Path(tmp) / "cargo.log"
            shim = Path(tmp) / "bin"
            bootstraps = cargo_stand_in(shim, record, self.env)
            # The build's scratch directories are this step's own, not the checkout's
            # .aws-sam/build and target/lambda/, which other steps of `make test` write (the
            # template test's recorder): SAM CLI keeps an explicit CARGO_TARGET_DIR.
            env = dict(self.shell([shim]), CARGO_RECORD=str(record), CARGO_TARGET_DIR=str(Path(tmp) / "target"),
                       SAM_BUILD_DIR=str(Path(tmp) / "build"))
            rc, out = typed(command, ROOT, env)
            built = record.read_text() if record.exists() else ""
            for binary in ("enqueue", "poller"):
                self.check(re.search(rf"^cargo lambda build .*--release.*--bin {binary}( |$)", built, re.M),
                           f"as typed: sam build asked cargo lambda for a release build of {binary} ({built.strip()})")
            outputs = self.deployed(stack, command, rc, out,
                                    {"QueueNames": queue, "AdoptedQueueNames": "", "Architecture": self.arch,
                                     "DirectMaxDelay": "0", "TablePrefix": "typed-"},
                                    {"EnqueueFunction": bootstraps["enqueue"], "PollerFunction": bootstraps["poller"]})
            if outputs is not None:
                self.check(outputs.get("Version") == source_version(),
                           f"as typed: {stack} outputs Version {source_version()} (got {outputs.get('Version')})")
                self.jobs_through(stack, outputs, queue, stored=True)
            self.deleted(stack, [f"typed-{queue}"], ROOT, env)


def source_version():
    return re.search(r'\[workspace\.package\]\s*\nversion = "([^"]+)"', (ROOT / "Cargo.toml").read_text()).group(1)


def cargo_tripwire(bin_dir):
    """A `cargo` first on the PATH that records any call and fails: a release's deploy must
    never reach it. Returns its directory."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "cargo"
    script.write_text(f'#!/usr/bin/env bash\necho "cargo $*" >> {shlex.quote(str(bin_dir / "cargo.log"))}\nexit 101\n')
    script.chmod(0o755)
    return bin_dir


def cargo_stand_in(bin_dir, record, env):
    """A `cargo` for `sam build`'s `cargo lambda build --release … --bin NAME`: it records the
    command and writes this machine's debug build of NAME (stripped) where cargo-lambda writes
    its output. Returns {binary: the bootstrap's bytes}."""
    bin_dir.mkdir(parents=True)
    out = {}
    for binary in ("enqueue", "poller"):
        stripped = bin_dir / f"{binary}.bootstrap"
        subprocess.run(["strip", "--strip-debug", "-o", str(stripped), str(ROOT / "target/debug" / binary)],
                       check=True, env=env)
        out[binary] = stripped.read_bytes()
    script = bin_dir / "cargo"
    script.write_text(f"""#!/usr/bin/env bash
echo "cargo $*" >> "$CARGO_RECORD"
if [ "${{1:-}}" = lambda ] && [ "${{2:-}}" = build ]; then
  bin=""; prev=""
  for a in "$@"; do [ "$prev" = --bin ] && bin=$a; prev=$a; done
  out="${{CARGO_TARGET_DIR:-target}}/lambda/$bin"
  mkdir -p "$out" && cp {shlex.quote(str(bin_dir))}/"$bin".bootstrap "$out/bootstrap" && chmod +x "$out/bootstrap"
  exit
fi
exec {shlex.quote(REAL_CARGO or "cargo")} "$@"
""")
    script.chmod(0o755)
    return out


def unzipped_bootstrap(data):
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            return z.read("bootstrap")
    except (zipfile.BadZipFile, KeyError):
        return None


def release_bootstraps(dist, version, arch):
    """{binary: the bootstrap in the release's zip}."""
    return {b: unzipped_bootstrap((dist / f"sqs-waiter-{version}-{b}-{arch}.zip").read_bytes()) for b in ("enqueue", "poller")}


MANAGED_STACK = "aws-sam-cli-managed-default"


def wait_for_managed_stack(cfn, check, timeout_s=600):
    """Until SAM CLI's managed bucket stack (which the first `resolve_s3` deploy creates) is
    complete: a second deploy that finds it still being created gives up."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            status = cfn.describe_stacks(StackName=MANAGED_STACK)["Stacks"][0]["StackStatus"]
        except cfn.exceptions.ClientError:
            status = "none yet"
        if status == "CREATE_COMPLETE" or status == "UPDATE_COMPLETE":
            return True
        if status.endswith(("FAILED", "ROLLBACK_COMPLETE")):
            break
        time.sleep(1)
    return check(False, f"as typed: SAM CLI's {MANAGED_STACK} stack is created (got {status})")


def start_lanes(r, ls, proxy, check, arch, stored_delay_s, dist, version):
    """Step 6 of the rehearsal, in two threads beside its other steps (their stacks, queues and
    tables are their own; both mostly wait on LocalStack's CloudFormation): the source build,
    then `make deploy RELEASE=`; the CDK app from the release's tarball, then README's plain
    `sam deploy` line once the first deploy has made SAM CLI's managed stack. Returns the
    threads and the Deliveries of each (to add up once they are joined)."""
    import cdk_app  # noqa: PLC0415 (cdk_app imports cdk_stack, which imports this module's neighbours)
    from roundtrip import Deliveries, RoundTrip

    env = dict(os.environ)  # before the threads: nothing reads os.environ while midway changes it
    deliveries = [Deliveries(check), Deliveries(check)]
    rts = [RoundTrip(ls, d) for d in deliveries]
    first = AsTyped(r, rts[0], ls, proxy, check, arch, stored_delay_s, env)
    second = AsTyped(r, rts[1], ls, proxy, check, arch, stored_delay_s, env)
    lanes = [[("make deploy from source", first.from_source)], []]
    if dist:
        zips = release_bootstraps(dist, version, arch)
        lanes[0].append(("make deploy RELEASE=", lambda: first.release_by_make(dist, version, zips)))
        lanes[1].append(("the CDK app", lambda: cdk_app.deploy_app(r, ls, rts[1], check, dist, arch, stored_delay_s, env)))
        lanes[1].append(("README's sam deploy line", lambda: wait_for_managed_stack(r.cfn, check)
                         and second.release_plain(dist, zips)))
    threads = [threading.Thread(target=run_steps, name="as-typed", args=(lane, check)) for lane in lanes]
    for t in threads:
        t.start()
    return threads, deliveries


def run_steps(steps, check):
    """Each step ((name, a function of no arguments)) in order; an exception is a failed check."""
    for name, step in steps:
        try:
            step()
        except Exception as e:  # noqa: BLE001 (a failed step is a failed check, not a lost thread)
            check(False, f"as typed: {name} stopped: {e!r}")
