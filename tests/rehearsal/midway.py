"""`make deploy`'s update check against a deployed stack (issue 48, defect 2): scripts/
check_queues.py reads the stack's parameters and processed template from CloudFormation (here
LocalStack's) and refuses an update that passes IAM's limit only while CloudFormation holds the
old policies beside the new ones, although its end state fits."""

import contextlib
import io
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import check_queues  # noqa: E402
import iam_budget  # noqa: E402

from derive import REGION  # noqa: E402


@contextlib.contextmanager
def aws_at(endpoint):
    """boto3 in check_params reaching LocalStack, as `make deploy` reaches AWS."""
    keys = {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
            "AWS_REGION": REGION, "AWS_DEFAULT_REGION": REGION}
    saved = {k: os.environ.get(k) for k in keys}
    os.environ.update(keys)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def check_update_midway(endpoint, stack, check):
    """The most queues of 80 characters whose end state fits, deployed over `stack` as it is:
    refused for the midway state only; the same lists on a new stack pass."""
    n = iam_budget.max_queues(80, iam_budget.partition_of(REGION), region=REGION)
    queues = [f"{i:080d}" for i in range(n)]
    check(iam_budget.problems(queues, region=REGION) == [],
          f"midway: {n} queues of 80 characters fit one stack's end state in {REGION}")
    argv = ["check_queues.py", ",".join(queues), "", "--region", REGION, "--params", ""]
    with aws_at(endpoint):
        for target, want in ((stack, 2), ("sqs-waiter-none", 0)):
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                status = check_queues.main(argv + ["--stack", target])
            said = err.getvalue()
            if want:
                ok = status == 2 and "midway" in said and "could not be read" not in said
                what = f"midway: make deploy refuses {n} new queues over {stack} as deployed (its policies stay until cleanup)"
            else:
                ok = status == 0
                what = "midway: the same lists on a stack that does not exist pass (nothing held beside them)"
            check(ok, f"{what} (exit {status}: {said.strip()[:300]})")
