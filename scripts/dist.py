#!/usr/bin/env python3
"""A release as files a user deploys without a Rust toolchain (issue 74): `make dist`.

    dist.py [--archs arm64,x86_64] [--host-debug | --templates-only] [--out dist]

Writes to OUT (version V from Cargo.toml):
- sqs-waiter-V-{enqueue,poller}-ARCH.zip: each function's `bootstrap`;
- sqs-waiter-V-linux-ARCH.tar.gz: the `sqs-waiter` CLI;
- template-ARCH.yaml: template.yaml with each function's code the zips beside it and its
  architecture fixed, for `sam deploy -t` (no `sam build`);
- samconfig.toml: the checkout's, which SAM CLI reads beside the template it is given;
- sqs-waiter-infra-V.tgz: the CDK construct (`npm pack`), compiled, with the zips in assets/,
  which it deploys when the app gives no code (it builds from source without them);
- CHANGELOG-V.md: the release's section of CHANGELOG.md;
- SHA256SUMS over all of them.

The bootstraps and the CLI come from `cargo lambda build --release` for each architecture. With
--host-debug (what `make test` uses) they are this machine's debug builds in target/debug,
stripped, for its own architecture only: the same packaging, without two cross builds.
Fails, naming the file, when template.yaml's Version output, infra/package.json,
infra/lib/version.ts or a client's package (clients/) is not V, or CHANGELOG.md has no section
for V.
"""

import argparse
import calendar
import gzip
import hashlib
import io
import json
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FUNCTIONS = ("enqueue", "poller")
CLI = "sqs-waiter"
ARCHS = ("arm64", "x86_64")
# Zip and tar entries get this time, so a release built twice from one commit is the same bytes.
FIXED_TIME = (2020, 1, 1, 0, 0, 0)


def version():
    cargo = (ROOT / "Cargo.toml").read_text()
    found = re.search(r'\[workspace\.package\]\s*\nversion = "([^"]+)"', cargo)
    if not found:
        sys.exit("dist: Cargo.toml has no [workspace.package] version")
    return found.group(1)


def check_versions(v):
    """Every place that names the release says V."""
    problems = []
    template = (ROOT / "template.yaml").read_text()
    if not re.search(r'\n  Version:\n(    .*\n)*?    Value: "' + re.escape(v) + '"\n', template):
        problems.append(f"template.yaml: Outputs.Version is not \"{v}\"")
    if f'"version": "{v}"' not in (ROOT / "infra/package.json").read_text():
        problems.append(f"infra/package.json: version is not {v}")
    if f'export const VERSION = "{v}";' not in (ROOT / "infra/lib/version.ts").read_text():
        problems.append(f"infra/lib/version.ts: VERSION is not {v}")
    if f'\nversion = "{v}"\n' not in (ROOT / "clients/python/pyproject.toml").read_text():
        problems.append(f"clients/python/pyproject.toml: version is not {v}")
    if f'"version": "{v}"' not in (ROOT / "clients/typescript/package.json").read_text():
        problems.append(f"clients/typescript/package.json: version is not {v}")
    if changelog_section(v) is None:
        problems.append(f"CHANGELOG.md: no section \"## [{v}]\"")
    return problems


def unreleased(text):
    """Whether CHANGELOG.md's text has an `[Unreleased]` section with entries: changes made since
    the last version, which a release of that version would carry under its number."""
    found = re.search(r"^## \[Unreleased\][^\n]*\n(.*?)(?=^## \[|\Z)", text, re.M | re.S)
    return bool(found and found.group(1).strip())


def changelog_section(v):
    text = (ROOT / "CHANGELOG.md").read_text()
    found = re.search(r"^## \[" + re.escape(v) + r"\].*?(?=^## \[|\Z)", text, re.M | re.S)
    return found.group(0).rstrip() + "\n" if found else None


def host_arch():
    return {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "arm64", "arm64": "arm64"}[platform.machine().lower()]


def built_binaries(arch, host_debug, scratch):
    """{binary: path} for the functions and the CLI of `arch` (host builds stripped into
    `scratch`)."""
    if host_debug:
        out = {}
        for name in (*FUNCTIONS, CLI):
            built = ROOT / "target/debug" / name
            if not built.is_file():
                sys.exit(f"dist: {built} is missing: cargo build -p enqueue -p poller -p sqs-waiter first")
            stripped = Path(scratch) / name
            subprocess.run(["strip", "--strip-debug", "-o", str(stripped), str(built)], check=True)
            out[name] = stripped
        return out
    lambda_dir = ROOT / f"target/lambda-{arch}"
    flag = "--arm64" if arch == "arm64" else "--x86-64"
    subprocess.run(["cargo", "lambda", "build", "--release", flag, "--lambda-dir", str(lambda_dir),
                    "-p", "enqueue", "-p", "poller", "-p", "sqs-waiter"], cwd=ROOT, check=True)
    return {name: lambda_dir / name / "bootstrap" for name in (*FUNCTIONS, CLI)}


def zip_bootstrap(binary, dest):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        info = zipfile.ZipInfo("bootstrap", date_time=FIXED_TIME)
        info.external_attr = 0o100755 << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        z.writestr(info, binary.read_bytes())
    dest.write_bytes(buf.getvalue())


def tar_cli(binary, dest):
    # gzip's header carries a time too: 0, so the same binary packs to the same bytes.
    with open(dest, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz, \
            tarfile.open(fileobj=gz, mode="w") as t:
        info = tarfile.TarInfo(CLI)
        data = binary.read_bytes()
        info.size, info.mode, info.mtime = len(data), 0o755, calendar.timegm(FIXED_TIME + (0, 0, 0))
        t.addfile(info, io.BytesIO(data))


def release_template(v, arch):
    """template.yaml with the zips as code and `arch` fixed: no `sam build`, no cargo."""
    text = (ROOT / "template.yaml").read_text()
    text, n = re.subn(r"\n    CodeUri: \.\n", "\n", text)
    if n != 1:
        sys.exit("dist: template.yaml's Globals CodeUri changed; update scripts/dist.py")
    for name in FUNCTIONS:
        built = (f"    Metadata:\n      BuildMethod: rust-cargolambda\n      BuildProperties:\n"
                 f"        Binary: {name}\n    Properties:\n")
        if built not in text:
            sys.exit(f"dist: template.yaml no longer builds {name} with cargo lambda; update scripts/dist.py")
        text = text.replace(built, f"    Properties:\n      CodeUri: sqs-waiter-{v}-{name}-{arch}.zip\n")
    fixed = "  Architecture:\n    Type: String\n    Default: arm64\n    AllowedValues: [arm64, x86_64]\n"
    if fixed not in text:
        sys.exit("dist: template.yaml's Architecture parameter changed; update scripts/dist.py")
    text = text.replace(fixed, f"  Architecture:\n    Type: String\n    Default: {arch}\n"
                               f"    AllowedValues: [{arch}]\n    Description: The architecture of this release's zips.\n")
    return f"# sqs-waiter {v} for {arch}: deploy with `sam deploy -t` (docs/deploy.md \"From a release\").\n" + text


def release_samconfig(v):
    """The checkout's samconfig.toml, beside the release's templates: SAM CLI reads the one in
    the directory of the template it is given, so `sam deploy -t DIR/template-ARCH.yaml` and
    `make deploy RELEASE=DIR` get language extensions, the capabilities, resolve_s3 and the
    change-set prompt from it (issue 81)."""
    return (f"# sqs-waiter {v}: SAM CLI's settings for `sam deploy -t template-ARCH.yaml` in this directory.\n"
            + (ROOT / "samconfig.toml").read_text())


def cdk_package(v, out, zips):
    """The CDK construct as an npm package (`npm pack`): compiled to JavaScript with its types,
    and the release's zips in `assets/`, which the construct uses before building from source."""
    infra = ROOT / "infra"
    tsc = infra / "node_modules/.bin/tsc"
    if not tsc.is_file():
        sys.exit("dist: infra/node_modules is missing: cd infra && npm ci")
    with tempfile.TemporaryDirectory(prefix="dist-cdk-") as stage:
        stage = Path(stage)
        subprocess.run([str(tsc), "-p", "tsconfig.build.json", "--outDir", str(stage / "lib")], cwd=infra, check=True)
        # The data the modules read when they load (ranges, the dashboard), which tsc does not copy.
        for data in (infra / "lib").glob("*.json"):
            shutil.copy(data, stage / "lib" / data.name)
        shutil.copy(ROOT / "LICENSE", stage / "LICENSE")
        (stage / "assets").mkdir()
        for z in zips:
            shutil.copy(z, stage / "assets" / z.name)
        manifest = json.loads((infra / "package.json").read_text())
        for dev_only in ("scripts", "devDependencies"):
            manifest.pop(dev_only, None)
        manifest.pop("private", None)
        manifest["license"] = "Apache-2.0"
        manifest.update(package_dependencies(manifest.pop("dependencies")))
        manifest.update({"main": "lib/sqs-waiter.js", "types": "lib/sqs-waiter.d.ts", "files": ["lib", "assets"]})
        (stage / "package.json").write_text(json.dumps(manifest, indent=2) + "\n")
        packed = subprocess.run(["npm", "pack", "--silent", "--pack-destination", str(out.resolve())], cwd=stage,
                                check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1]
    return out / packed


def package_dependencies(deps):
    """The CDK package's dependencies as an app installs it (issue 81): aws-cdk-lib and
    constructs are the app's own (peers, so the app never gets a second, nested copy);
    cargo-lambda-cdk is needed only to build from source, which a release with its zips never
    does (an optional peer, loaded on first use); cdk-nag is the example app's, not the
    construct's."""
    missing = {"aws-cdk-lib", "constructs", "cargo-lambda-cdk"} - set(deps)
    if missing:
        sys.exit(f"dist: infra/package.json no longer depends on {', '.join(sorted(missing))}; update scripts/dist.py")
    return {
        "peerDependencies": {
            "aws-cdk-lib": f"^{deps['aws-cdk-lib']}",
            "constructs": f"^{deps['constructs'].split('.')[0]}.0.0",
            "cargo-lambda-cdk": deps["cargo-lambda-cdk"],
        },
        "peerDependenciesMeta": {"cargo-lambda-cdk": {"optional": True}},
    }


def sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main(argv):
    parser = argparse.ArgumentParser(prog="dist.py", description=__doc__.strip().splitlines()[0])
    parser.add_argument("--archs", default=",".join(ARCHS))
    parser.add_argument("--host-debug", action="store_true")
    parser.add_argument("--out", default=str(ROOT / "dist"))
    parser.add_argument("--templates-only", action="store_true", help="only the SAM templates (no build)")
    args = parser.parse_args(argv[1:])
    v = version()
    problems = check_versions(v)
    if problems:
        for p in problems:
            print(f"dist: {p}", file=sys.stderr)
        return 2
    # A release is of one version's code: changes under [Unreleased] need a version of their
    # own first (bump it, and move them under it). The rehearsal's packs of this machine's
    # builds (--host-debug) and the templates alone are not releases (issue 82, defect 5).
    if not (args.host_debug or args.templates_only) and unreleased((ROOT / "CHANGELOG.md").read_text()):
        print(f"dist: CHANGELOG.md has entries under [Unreleased]: a release labelled {v} would carry them; "
              "bump the version and move them under its section first (docs/upgrades.md, Versions)", file=sys.stderr)
        return 2
    archs = [host_arch()] if args.host_debug else [a for a in args.archs.split(",") if a]
    if any(a not in ARCHS for a in archs):
        sys.exit(f"dist: --archs takes {', '.join(ARCHS)}, not {args.archs}")
    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    started = time.monotonic()
    if args.templates_only:
        for arch in archs:
            (out / f"template-{arch}.yaml").write_text(release_template(v, arch))
        (out / "samconfig.toml").write_text(release_samconfig(v))
        return 0
    for arch in archs:
        with tempfile.TemporaryDirectory(prefix="dist-") as scratch:
            binaries = built_binaries(arch, args.host_debug, scratch)
            for name in FUNCTIONS:
                zip_bootstrap(binaries[name], out / f"sqs-waiter-{v}-{name}-{arch}.zip")
            tar_cli(binaries[CLI], out / f"sqs-waiter-{v}-linux-{arch}.tar.gz")
        (out / f"template-{arch}.yaml").write_text(release_template(v, arch))
    (out / "samconfig.toml").write_text(release_samconfig(v))
    cdk_package(v, out, sorted(out.glob("*.zip")))
    (out / f"CHANGELOG-{v}.md").write_text(changelog_section(v))
    files = sorted(p for p in out.iterdir() if p.name != "SHA256SUMS")
    (out / "SHA256SUMS").write_text("".join(f"{sha256(p)}  {p.name}\n" for p in files))
    for p in files:
        print(f"dist: {p.name} {p.stat().st_size:,} bytes")
    print(f"dist: sqs-waiter {v} in {out} ({time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
