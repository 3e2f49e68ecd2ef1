#!/usr/bin/env bash
# The SAM path, offline, up to the AWS call (run by `make template-test`, part of `make test`):
#   1. structural assertions on template.yaml (tests/template/test_template.py);
#   2. `make deploy` hands the same --parameter-overrides to `sam build` and `sam deploy`;
#   3. `sam validate` with language extensions (the full SAM translation, not only cfn-lint);
#   4. `sam build` through `make sam-build` for both architectures, with `cargo` replaced by a
#      recorder: a real release build of the SDK stack takes ~5.5 min per architecture on 2
#      cores, and what has to be proved is which cargo-lambda command SAM runs and that the
#      template loads and builds. The real cargo-lambda build is `make build`.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH" SAM_CLI_TELEMETRY=0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "template-test: FAILED: $*" >&2; exit 1; }
# Offline: `make deploy`'s checks look for the stack's current parameters, and without
# credentials boto3 would first ask the EC2 instance metadata service (a second or two a call).
export AWS_EC2_METADATA_DISABLED=true

echo "template-test: structure"
python tests/template/test_template.py
python tests/template/test_options.py
python tests/template/test_scope.py
python tests/template/test_grants.py
python tests/template/test_dist.py
echo "template-test: the rehearsal's CloudFormation proxy reads a change set's parameters as AWS does"
python tests/rehearsal/test_cfn_proxy.py
echo "template-test: the IAM call check's own tests (SAM and CDK statements, IAM matching)"
python tests/iam/test_check_calls.py

echo "template-test: make deploy passes one set of overrides to build and deploy"
dry=$(make -s -n deploy QUEUES=orders,billing.fifo ARCH=x86_64 STACK=dev PARAMS="Shards=8")
build=$(grep -E '^sam build ' <<<"$dry") || fail "no sam build in: $dry"
deploy=$(grep -E '^sam deploy ' <<<"$dry") || fail "no sam deploy in: $dry"
[ "${build#*--parameter-overrides }" = "${deploy#*--parameter-overrides }" ] \
  || fail "build and deploy overrides differ: '$build' vs '$deploy'"
grep -q -- "--stack-name dev" <<<"$deploy" || fail "STACK not passed: $deploy"
grep -q -- "--template-file .aws-sam/build/template.yaml" <<<"$deploy" || fail "deploy does not take the built template: $deploy"
for want in "'QueueNames=\"orders,billing.fifo\"'" "'AdoptedQueueNames=\"\"'" "Architecture=x86_64" "Shards=8"; do
  grep -q -- "$want" <<<"$build" || fail "'$want' missing from: $build"
done
echo "template-test: make deploy RELEASE=dir deploys the release's template, without sam build"
release=$(make -s -n deploy QUEUES=orders,billing.fifo ARCH=x86_64 STACK=dev PARAMS="Shards=8" RELEASE=target/dist-debug)
! grep -qE '^sam build ' <<<"$release" || fail "RELEASE still builds: $release"
grep -q -- "--template-file target/dist-debug/template-x86_64.yaml" <<<"$release" || fail "RELEASE's template not deployed: $release"
[ "$(grep -E '^sam deploy ' <<<"$release" | sed 's/.*--parameter-overrides //')" = "${deploy#*--parameter-overrides }" ] \
  || fail "RELEASE's overrides differ from a build's: $release"
# SAM CLI reads samconfig.toml beside the template it is given: both forms name theirs (issue 81).
grep -q -- "--config-file $PWD/samconfig.toml " <<<"$deploy" || fail "make deploy from source does not read samconfig.toml: $deploy"
grep -q -- "--config-file $PWD/target/dist-debug/samconfig.toml " <<<"$release" || fail "make deploy RELEASE= does not read the release's samconfig.toml: $release"
# make deploy RELEASE= checks the release's template, not the checkout's: a release whose
# defaults the checks refuse (PollerTimeout below FifoHold + 5) is refused, though the
# checkout's template.yaml would pass.
python scripts/dist.py --templates-only --out "$work/odd-release"
sed -i '/^  FifoHold:$/,/Default:/s/Default: 0/Default: 60/; /^  PollerTimeout:$/,/Default:/s/Default: 70/Default: 30/' "$work/odd-release/template-x86_64.yaml"
if out=$(make -s deploy QUEUES=orders ARCH=x86_64 STACK=no-such-stack RELEASE="$work/odd-release" 2>&1); then
  fail "make deploy RELEASE= with a release the checks refuse succeeded"
fi
grep -q "PollerTimeout (30) must be at least FifoHold + 5 (65)" <<<"$out" || fail "make deploy RELEASE= did not check the release's template: $out"
if out=$(make -s deploy QUEUES=orders ARCH=x86_64 RELEASE="$work" 2>&1); then fail "make deploy RELEASE=<not a release> succeeded"; fi
grep -q "template-x86_64.yaml is missing" <<<"$out" || fail "make deploy RELEASE=<not a release> said: $out"
if out=$(make -s deploy 2>&1); then fail "make deploy without QUEUES succeeded"; fi
grep -q "QUEUES is required" <<<"$out" || fail "make deploy without QUEUES said: $out"
if out=$(make -s deploy QUEUES=orders ARCH=sparc 2>&1); then fail "ARCH=sparc accepted"; fi
grep -q "ARCH must be arm64 or x86_64" <<<"$out" || fail "make deploy ARCH=sparc said: $out"
dry=$(make -s -n deploy QUEUES=orders ADOPT=billing.fifo,refunds)
grep -q -- "'QueueNames=\"orders\"' 'AdoptedQueueNames=\"billing.fifo,refunds\"'" <<<"$dry" || fail "ADOPT not passed: $dry"
# What SAM CLI makes of the overrides make passes: both lists every time, an empty one as "",
# so a deploy never keeps a previous list (UsePreviousValue) that the checks did not see.
overrides() {
  local cmd
  cmd=$(make -s -n deploy "$@" | grep -E '^sam deploy ')
  eval "set -- ${cmd#*--parameter-overrides }"
  python -c 'import sys; from samcli.cli.types import CfnParameterOverridesType as T; print(T().convert(tuple(sys.argv[1:]), None, None))' "$@"
}
got=$(overrides QUEUES=orders)
[ "$got" = "{'QueueNames': 'orders', 'AdoptedQueueNames': '', 'Architecture': 'arm64'}" ] || fail "make deploy QUEUES=orders sends $got"
got=$(overrides ADOPT=billing.fifo,refunds)
[ "$got" = "{'QueueNames': '', 'AdoptedQueueNames': 'billing.fifo,refunds', 'Architecture': 'arm64'}" ] || fail "make deploy ADOPT=... sends $got"
# Queue lists the template cannot deploy are refused before sam build, naming the queues.
refused() {
  local want=$1; shift
  if out=$(make -s deploy "$@" 2>&1); then fail "make deploy $* succeeded"; fi
  grep -q -- "$want" <<<"$out" || fail "make deploy $* said: $out"
}
refused "'jobs.fifo' and 'jobs-fifo' become the same resource ids" QUEUES=jobs-fifo,jobs.fifo
refused "'orders_eu' and 'orders-eu' become the same resource ids (EnqueueAdoptedorderseu)" QUEUES=billing ADOPT=orders-eu,orders_eu
# More queues than IAM holds in one SAM stack's roles: refused before SAM, pointing to CDK.
refused "12 queues do not fit one SAM stack" QUEUES="$(python -c 'print(",".join(str(i).zfill(80) for i in range(12)))')"
refused "table name 'ab' (2 characters)" QUEUES=ab PARAMS="TablePrefix="
refused "'orders' is named twice (also in QUEUES)" QUEUES=orders,billing ADOPT=orders
refused "'bad name' is not an SQS queue name" QUEUES="bad name"
refused "'x.fifo.fifo' is not an SQS queue name" QUEUES=x.fifo.fifo
# Parameters CloudFormation cannot compare (issue 48 defect 8), refused before SAM. (No
# credentials here: the stack's current values cannot be read, so the defaults stand in.)
refused "PollerTimeout (30) must be at least FifoHold + 5 (65)" QUEUES=orders STACK=no-such-stack PARAMS="FifoHold=60 PollerTimeout=30"
refused "PollerReservedConcurrency (2) must be at least PollerGroups (4)" QUEUES=orders STACK=no-such-stack PARAMS="PollerGroups=4 PollerReservedConcurrency=2"
python scripts/check_queues.py "$(python -c 'print("q" * 80)')" "$(python -c 'print("f" * 75 + ".fifo")')" \
  || fail "80-character names refused"
if python scripts/check_queues.py "$(python -c 'print("q" * 81)')" 2>/dev/null; then fail "an 81-character name accepted"; fi

echo "template-test: plain sam validate, as a user types it in a fresh clone (both queue lists at their empty defaults)"
sam validate --region us-east-1 || fail "plain sam validate"

echo "template-test: sam validate --language-extensions"
# sam validate takes no parameter overrides, so a copy gives QueueNames (and CrossAccountGrants)
# a default to expand.
python - "$work/template.yaml" <<'PY'
import re, sys
src = open("template.yaml").read()
out, n = re.subn(r"(\n  QueueNames:\n    Type: CommaDelimitedList\n)    Default: \"\"\n", r'\1    Default: "orders,billing.fifo"\n', src)
assert n == 1, "QueueNames parameter not found"
# And two cross-account grants, so the grants' loop expands too.
out, n = re.subn(r"(\n  CrossAccountGrants:\n    Type: CommaDelimitedList\n)    Default: \"\"\n",
                 r'\1    Default: "send=210987654321,orders--view=arn:aws:iam::210987654321:role/producer"\n', out)
assert n == 1, "CrossAccountGrants parameter not found"
open(sys.argv[1], "w").write(out)
PY
sam validate --language-extensions --region us-east-1 -t "$work/template.yaml" \
  || fail "sam validate --language-extensions"

echo "template-test: a release's templates (scripts/dist.py), through cfn-lint and sam validate"
python scripts/dist.py --templates-only --out "$work/release"
for arch in arm64 x86_64; do
  t="$work/release/template-$arch.yaml"
  grep -q "CodeUri: sqs-waiter-.*-enqueue-$arch.zip" "$t" || fail "$t: enqueue's code is not its zip"
  ! grep -q "BuildMethod" "$t" || fail "$t: still built by sam build"
  cfn-lint "$t" || fail "cfn-lint $t"
  sam validate --language-extensions --region us-east-1 -t "$t" >/dev/null || fail "sam validate $t"
done

echo "template-test: sam build (cargo-lambda recorder) for arm64 and x86_64"
mkdir -p "$work/bin"
cat > "$work/bin/cargo" <<'SH'
#!/usr/bin/env bash
echo "cargo $*" >> "$CARGO_RECORD"
if [ "${1:-}" = lambda ] && [ "${2:-}" = build ]; then
  bin=""; prev=""
  for a in "$@"; do [ "$prev" = --bin ] && bin=$a; prev=$a; done
  out="${CARGO_TARGET_DIR:-target}/lambda/$bin"
  mkdir -p "$out" && printf '#!/bin/sh\necho recorded %s\n' "$*" > "$out/bootstrap" && chmod +x "$out/bootstrap"
fi
SH
chmod +x "$work/bin/cargo"
for arch in arm64 x86_64; do
  export CARGO_RECORD="$work/cargo-$arch.log"
  : > "$CARGO_RECORD"
  built="$work/build-$arch"
  PATH="$work/bin:$PATH" make -s sam-build QUEUES=orders,billing.fifo ARCH="$arch" SAM_BUILD_DIR="$built" > "$work/build-$arch.log" 2>&1 \
    || { cat "$work/build-$arch.log" >&2; fail "sam build ($arch)"; }
  for bin in enqueue poller; do
    line=$(grep -E "^cargo lambda build .*--bin $bin( |$)" "$CARGO_RECORD") || fail "no cargo lambda build for $bin ($arch): $(cat "$CARGO_RECORD")"
    grep -q -- "--release" <<<"$line" || fail "not a release build: $line"
    if [ "$arch" = arm64 ]; then
      grep -q -- "--arm64" <<<"$line" || fail "arm64 stack built without --arm64: $line"
    else
      ! grep -q -- "--arm64" <<<"$line" || fail "x86_64 stack built for arm64: $line"
    fi
  done
  for fn in EnqueueFunction PollerFunction; do
    grep -q recorded "$built/$fn/bootstrap" || fail "$fn: no bootstrap in the build dir"
  done
  grep -q "Fn::ForEach::Tables" "$built/template.yaml" || fail "built template lost the table loop"
  echo "  $arch: $(grep -c '^cargo lambda build' "$CARGO_RECORD") cargo lambda builds: $(grep '^cargo lambda build' "$CARGO_RECORD" | tr '\n' ';')"
done
echo "template-test: ok"
