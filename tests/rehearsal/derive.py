"""What the deploy rehearsal (tests/rehearsal/rehearse.py) gives LocalStack: template.yaml, and
the functions' code (the host's debug build of each binary, zipped as `bootstrap`).

LocalStack's `Fn::ForEach` refuses `&{}` in logical ids and, inside a loop body, turns every
string `Fn::Sub` into a plain string; its engine recurses without end when it updates a stack
that carries the SAM transform, and reads a CommaDelimitedList parameter as a string on update.
So the rehearsal expands the loops itself, per AWS's documented semantics, inlines the joins of
the queue lists, points the functions' code at the bootstraps in LocalStack's S3, and applies
the SAM transform with aws-sam-translator (the library behind AWS's own transform).
"""

import io
import json
import subprocess
import sys
import zipfile
from pathlib import Path

from cfnlint.decode import cfn_yaml
from samtranslator.translator.transform import transform as sam_transform

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
from iam_budget import expand_loops  # noqa: E402  (one loop expansion for the budget and here)
REGION = "us-east-1"
BUCKET = "sqs-waiter-rehearsal"
BINARIES = ("enqueue", "poller")


def inline_queue_list(obj, lists):
    """`!Join [sep, !Ref QueueNames]` (or AdoptedQueueNames) as the string it stands for
    (LocalStack's engine reads a CommaDelimitedList parameter as a string when it updates a
    stack, and refuses the Join)."""
    if isinstance(obj, list):
        return [inline_queue_list(o, lists) for o in obj]
    if not isinstance(obj, dict):
        return obj
    join = obj.get("Fn::Join")
    if len(obj) == 1 and isinstance(join, list) and len(join) == 2 and isinstance(join[1], dict) \
            and join[1].get("Ref") in lists:
        return join[0].join(lists[join[1]["Ref"]])
    return {k: inline_queue_list(v, lists) for k, v in obj.items()}


def derived_template(queues, adopted=(), groups=1, grants=(), source=None):
    """template.yaml (or `source`, a release's template from `make dist`) with its Fn::ForEach
    expanded for these queues (and adopted queues, whose tables exist), this PollerGroups and
    these CrossAccountGrants, and the code in S3: each binary's `{binary}.zip`, or the release's
    zip under its own name."""
    template = load_template(Path(source or ROOT / "template.yaml").read_text())
    if source is None:
        if template["Globals"]["Function"].get("CodeUri") != ".":
            sys.exit("rehearse: template.yaml's CodeUri changed; update tests/rehearsal/derive.py")
        del template["Globals"]["Function"]["CodeUri"]
    for binary in BINARIES:
        function = template["Resources"][f"{binary.capitalize()}Function"]
        if source is not None:
            # The release's zip, uploaded under its own name (tests/rehearsal/from_dist.py).
            function["Properties"]["CodeUri"] = f"s3://{BUCKET}/{function['Properties']['CodeUri']}"
            continue
        if function["Metadata"]["BuildProperties"]["Binary"] != binary:
            sys.exit(f"rehearse: {binary.capitalize()}Function no longer builds {binary}; update tests/rehearsal/derive.py")
        function["Properties"]["CodeUri"] = f"s3://{BUCKET}/{binary}.zip"
    try:
        return json.dumps(transformed(template, queues, adopted, groups, grants), separators=(",", ":"))
    except ValueError as e:
        sys.exit(f"rehearse: {e}")


def load_template(text):
    """A template (YAML or JSON, with CloudFormation's short forms) as plain JSON data."""
    return json.loads(json.dumps(cfn_yaml.loads(text)))


def transformed(template, queues, adopted=(), groups=1, grants=()):
    """What AWS's CloudFormation makes of the template's two transforms (AWS::LanguageExtensions,
    then AWS::Serverless-2016-10-31) for these parameter values: the loops expanded per AWS's
    documented semantics, the joins of the queue lists inlined, the SAM transform applied by
    aws-sam-translator. The code (CodeUri) is left as the template gives it. Raises ValueError
    when the template is not one the rehearsal can expand."""
    # A CommaDelimitedList given "" is [""]: the loops' resources then carry a false condition.
    lists = {"QueueNames": list(queues) or [""], "AdoptedQueueNames": list(adopted) or [""],
             "CrossAccountGrants": list(grants) or [""]}
    # Loud when the template changes under the rehearsal, rather than rehearsing less.
    if template.get("Transform") != ["AWS::LanguageExtensions", "AWS::Serverless-2016-10-31"]:
        raise ValueError("template.yaml's Transform changed; update tests/rehearsal/derive.py")
    template = dict(template, Transform=["AWS::Serverless-2016-10-31"])
    if not any(key.startswith("Fn::ForEach::") for key in template["Resources"]):
        raise ValueError("template.yaml has no Fn::ForEach left; update tests/rehearsal/derive.py")
    resources = expand_loops(template["Resources"], lists, template.get("Mappings"), {"PollerGroups": str(groups)})
    template["Resources"] = inline_queue_list(resources, lists)
    template["Globals"] = inline_queue_list(template["Globals"], lists)
    template["Conditions"] = inline_queue_list(template["Conditions"], lists)
    # The SAM transform, by the library AWS's own transform is built on (LocalStack's engine
    # recurses without end when it updates a stack that carries the transform).
    params = {"QueueNames": ",".join(queues), "AdoptedQueueNames": ",".join(adopted),
              "CrossAccountGrants": ",".join(grants),
              "AWS::Region": REGION, "AWS::AccountId": "000000000000", "AWS::Partition": "aws"}
    # Compact when dumped, as CloudFormation counts a template's bytes (the rehearsal sends it
    # through S3, as `make deploy` does: inline, CreateStack takes at most 51,200).
    return sam_transform(template, params, NoManagedPolicies())


class NoManagedPolicies:
    """The template names no AWS managed policies (its roles are its own)."""

    def load(self):
        return {}


def stripped_bootstrap(binary, dest):
    """The host build of `binary` without its debug sections (a debug binary is about 120 MB)."""
    built = ROOT / "target/debug" / binary
    if not built.is_file():
        sys.exit(f"rehearse: {built} is missing; run `cargo build --workspace --all-targets` first (make rehearse does)")
    subprocess.run(["strip", "--strip-debug", "-o", str(dest), str(built)], check=True)


def zipped_dir(directory):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        for path in sorted(Path(directory).rglob("*")):
            if path.is_file():
                info = zipfile.ZipInfo(str(path.relative_to(directory)))
                info.external_attr = (path.stat().st_mode & 0o777) << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                z.writestr(info, path.read_bytes())
    return buf.getvalue()
