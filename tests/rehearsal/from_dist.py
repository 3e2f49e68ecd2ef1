"""A release from `make dist` (issue 74), with no cargo on the PATH: its files are checked
against SHA256SUMS and its CLI names its version. It is then deployed by the commands README
gives (as_typed.py: `make deploy RELEASE=`, the plain `sam deploy -t` line) and by a CDK app
that installs its package (cdk_app.py). `make rehearse` packages the release with
`scripts/dist.py --host-debug` (this machine's architecture, debug builds) into
target/dist-debug; REHEARSE_DIST=dist rehearses the one `make dist` wrote."""

import hashlib
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

from derive import ROOT


def without_cargo():
    """The PATH without any directory that holds cargo (rustup's ~/.cargo/bin, say)."""
    os.environ["PATH"] = os.pathsep.join(
        p for p in os.environ.get("PATH", "").split(os.pathsep) if p and not (Path(p) / "cargo").exists())
    return shutil.which("cargo") is None


def check_release(check, arch):
    """The release's files against SHA256SUMS and its CLI's version, with cargo off the PATH.
    Returns (the release directory, its version), or (None, None)."""
    # make rehearse packages this machine's debug builds apart from a user's dist/.
    dist = Path(os.environ.get("REHEARSE_DIST") or ROOT / "target/dist-debug")
    sums = dist / "SHA256SUMS"
    if not check(sums.is_file(), f"release: {dist} holds a release (make dist, or scripts/dist.py --host-debug)"):
        return None, None
    check(without_cargo(), "release: cargo is not on the PATH")
    listed = dict(reversed(line.split("  ", 1)) for line in sums.read_text().splitlines() if line)
    for name, digest in listed.items():
        check(hashlib.sha256((dist / name).read_bytes()).hexdigest() == digest, f"release: {name} matches SHA256SUMS")
    check("samconfig.toml" in listed, "release: it carries samconfig.toml for its own sam deploy")
    version = re.search(r"sqs-waiter-([0-9][^-]*)-enqueue-", " ".join(listed)).group(1)
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(dist / f"sqs-waiter-{version}-linux-{arch}.tar.gz") as t:
            t.extractall(tmp, filter="data")
        out = subprocess.run([str(Path(tmp) / "sqs-waiter"), "--version"], capture_output=True, text=True)
        check(out.returncode == 0 and version in out.stdout, f"release: its CLI says {version} ({out.stdout.strip()})")
    return dist, version
