#!/usr/bin/env bash
# The first part of `make test`, timed by phase (scripts/phase.sh): the installs (mostly
# downloads: the Python venvs, LocalStack, npm, DynamoDB Local, cargo-machete) run beside
# clippy and then the one debug build (CPU), since neither needs the other. The installs'
# output is kept and printed after, whole. The exit status is the first failure's.
set -uo pipefail
cd "$(dirname "$0")/.."
phase="bash scripts/phase.sh"
submake="make --no-print-directory"
mkdir -p target
log=target/install.log
set -m
$phase install $submake test-installs > "$log" 2>&1 &
installs=$!
set +m
trap 'kill -INT -- -"$installs" 2>/dev/null; wait "$installs"; exit 130' INT TERM
$phase clippy $submake clippy && $phase build $submake build-for-tests
rust=$?
wait "$installs"
install_status=$?
echo "==== the installs ($log) ===="
cat "$log"
[ "$rust" -eq 0 ] || exit "$rust"
exit "$install_status"
