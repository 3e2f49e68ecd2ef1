#!/usr/bin/env bash
# The test suite on both backends, each part timed (scripts/phase.sh):
# 1. the e2e tests that take the machine alone (nextest's `alone` group: herds, ten thousand
#    jobs, the tests that time arrivals), one at a time on LocalStack, then on moto, with nothing
#    else running: starved of CPU by a simulation beside them, a run's partitions waited past
#    their bound and an urgent job arrived last;
# 2. the rest on both sides at once: in the foreground the unit tests, the simulation, the e2e
#    suite on moto, then the template checks; beside them the e2e suite on LocalStack, then the
#    deploy rehearsal and the lints (their output kept, then printed whole, so the two sides
#    never interleave). The rehearsal mostly waits on LocalStack's CloudFormation, so it goes
#    where the cores are free at the end; the two sides then end within a minute of each other
#    (563 s and 454 s in a cold run with the lints in the foreground).
# Every part runs to the end; the exit status is the first failure's.
#
# Each e2e pass is one cargo-nextest run (.config/nextest.toml: which tests, how many at once,
# which first) beside emulators shared by its tests (the `emulators` binary starts them and stops
# them; each test leases a region of one, e2e::pool). docs/contributing.md has the rule for which
# test runs on which backend.
#
# One part alone: `scripts/test_both_backends.sh unit|simulation|e2e-moto|e2e-localstack` (the
# e2e parts with their `alone` tests first, as in a full run).
set -uo pipefail
cd "$(dirname "$0")/.."
# The venv holds cargo-nextest (requirements-dev.txt) and moto.
export PATH="$PWD/.venv/bin:$PATH"
phase="bash scripts/phase.sh"
# Every part selects the whole workspace, so cargo resolves one feature set and builds nothing
# that `make build-for-tests` did not (a `-p` selection would rebuild the SDK stack).
# (scripts/binary_times.py adds how long each test binary ran; pipefail keeps cargo's status.)
times() { python3 scripts/binary_times.py; }
unit() {
  cargo test --workspace --no-fail-fast --lib --bins -- --skip simulation 2>&1 | times \
    && cargo test --workspace --no-fail-fast --doc 2>&1 | times
}
simulation() { cargo test --workspace --no-fail-fast --lib simulation 2>&1 | times; }
# Emulators shared by a pass's tests: one for each test it runs at once (test-threads in
# .config/nextest.toml), so that a test's emulator answers only it, as its own did; one for the
# `alone` tests, which run one at a time.
e2e_pass() {
  local profile=$1 group=$2 emulators=3 rc
  [ "$group" = "group(alone)" ] && emulators=1
  target/debug/emulators "$emulators" -- \
    cargo nextest run --workspace --no-fail-fast --no-tests=pass --profile "$profile" -E "$group" --hide-progress-bar 2>&1
  rc=$?
  python3 scripts/test_times.py "target/nextest/$profile/junit.xml" "$E2E_BACKEND"
  return "$rc"
}
# Runs each of its arguments (function names) to the end; fails with the first failure's status.
all_of() {
  local rc=0 part
  for part in "$@"; do
    "$part"
    local s=$?
    [ "$rc" -ne 0 ] || rc=$s
  done
  return "$rc"
}
alone_localstack() { E2E_BACKEND=localstack e2e_pass e2e-localstack "group(alone)"; }
alone_moto() { E2E_BACKEND=moto e2e_pass e2e-moto "group(alone)"; }
e2e_alone() { all_of alone_localstack alone_moto; }
e2e_moto() { E2E_BACKEND=moto e2e_pass e2e-moto "not group(alone)"; }
e2e_localstack() { E2E_BACKEND=localstack e2e_pass e2e-localstack "not group(alone)"; }
# A pass by hand: its `alone` tests, then the rest.
e2e_moto_whole() { all_of alone_moto e2e_moto; }
e2e_localstack_whole() { all_of alone_localstack e2e_localstack; }

export -f times unit simulation e2e_pass all_of alone_localstack alone_moto e2e_alone e2e_moto e2e_localstack e2e_moto_whole e2e_localstack_whole
case "${1:-all}" in
  unit | simulation) $phase "$1" bash -o pipefail -c "$1"; exit ;;
  e2e-moto | e2e-localstack) $phase "$1" bash -o pipefail -c "${1/-/_}_whole"; exit ;;
  all) ;;
  *) echo "usage: $0 [unit|simulation|e2e-moto|e2e-localstack]" >&2; exit 2 ;;
esac

status=0
$phase e2e-alone bash -o pipefail -c e2e_alone || status=$?

log=target/e2e-localstack.log
mkdir -p target
# Job control puts the LocalStack pass in a process group of its own, which an interrupt of
# this script stops whole (nextest, the tests, the emulators binary and through it the
# emulators).
set -m
background() {
  local rc=0 step
  $phase e2e-localstack bash -o pipefail -c e2e_localstack || rc=$?
  for step in "rehearsal rehearse" "lint-deps lint-deps" "lint lint-template"; do
    # shellcheck disable=SC2086 # a phase name, then a make target
    set -- $step
    $phase "$1" make --no-print-directory "$2"
    local s=$?
    [ "$rc" -ne 0 ] || rc=$s
  done
  return "$rc"
}
background > "$log" 2>&1 &
localstack=$!
set +m
trap 'kill -INT -- -"$localstack" 2>/dev/null; wait "$localstack"; exit 130' INT TERM
for part in unit simulation e2e_moto; do
  $phase "${part/_/-}" bash -o pipefail -c "$part"
  rc=$?
  [ "$status" -ne 0 ] || status=$rc
done
$phase template make --no-print-directory template-test infra-test
rc=$?
[ "$status" -ne 0 ] || status=$rc
wait "$localstack"
localstack_status=$?
echo "==== the e2e suite on LocalStack, the rehearsal and the lints ($log) ===="
cat "$log"
if [ "$status" -ne 0 ]; then
  echo "the tests that take the machine alone, the suite on moto or the template checks failed (exit $status)" >&2
  exit "$status"
fi
if [ "$localstack_status" -ne 0 ]; then
  echo "the e2e suite on LocalStack, the rehearsal or a lint failed (exit $localstack_status)" >&2
  exit "$localstack_status"
fi
