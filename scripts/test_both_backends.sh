#!/usr/bin/env bash
# The test suite on both backends at once, each part timed (scripts/phase.sh): in the
# foreground the unit tests, the simulation, the e2e suite on moto, then the template checks and
# the lints; beside them the e2e suite on LocalStack, then the deploy rehearsal (their output
# kept, then printed whole, so the two sides never interleave). The rehearsal mostly waits on
# LocalStack's CloudFormation, so it goes where the cores are free at the end; the two sides
# then end within a minute or so of each other. Every part runs to the end; the exit status is
# the first failure's.
#
# Each e2e pass is one cargo-nextest run (.config/nextest.toml: which tests, how many at once,
# which first) beside emulators shared by its tests (the `emulators` binary starts them and stops
# them; each test leases a region of one, e2e::pool). docs/contributing.md has the rule for which
# test runs on which backend.
#
# One part alone: `scripts/test_both_backends.sh unit|simulation|e2e-moto|e2e-localstack`.
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
# Emulators shared per pass: one for each test the pass runs at once (test-threads in
# .config/nextest.toml), so that a test's emulator answers only it, as its own did.
EMULATORS_PER_PASS=3
e2e_pass() {
  local profile=$1
  target/debug/emulators "$EMULATORS_PER_PASS" -- \
    cargo nextest run --workspace --no-fail-fast --profile "$profile" --hide-progress-bar 2>&1
  local rc=$?
  python3 scripts/test_times.py "target/nextest/$profile/junit.xml"
  return "$rc"
}
e2e_moto() { E2E_BACKEND=moto e2e_pass e2e-moto; }
e2e_localstack() { E2E_BACKEND=localstack e2e_pass e2e-localstack; }

export EMULATORS_PER_PASS
export -f times unit simulation e2e_pass e2e_moto e2e_localstack
case "${1:-all}" in
  unit | simulation | e2e-moto | e2e-localstack) $phase "$1" bash -o pipefail -c "${1/-/_}"; exit ;;
  all) ;;
  *) echo "usage: $0 [unit|simulation|e2e-moto|e2e-localstack]" >&2; exit 2 ;;
esac

log=target/e2e-localstack.log
mkdir -p target
# Job control puts the LocalStack pass in a process group of its own, which an interrupt of
# this script stops whole (nextest, the tests, the emulators binary and through it the
# emulators).
set -m
background() {
  local rc rehearsal
  $phase e2e-localstack bash -o pipefail -c e2e_localstack
  rc=$?
  $phase rehearsal make --no-print-directory rehearse
  rehearsal=$?
  [ "$rc" -ne 0 ] || rc=$rehearsal
  return "$rc"
}
background > "$log" 2>&1 &
localstack=$!
set +m
trap 'kill -INT -- -"$localstack" 2>/dev/null; wait "$localstack"; exit 130' INT TERM
status=0
for part in unit simulation e2e_moto; do
  $phase "${part/_/-}" bash -o pipefail -c "$part"
  rc=$?
  [ "$status" -ne 0 ] || status=$rc
done
for step in "template template-test infra-test" "lint-deps lint-deps" "lint lint-template"; do
  # shellcheck disable=SC2086 # a phase name, then make targets
  set -- $step
  name=$1
  shift
  $phase "$name" make --no-print-directory "$@"
  rc=$?
  [ "$status" -ne 0 ] || status=$rc
done
wait "$localstack"
localstack_status=$?
echo "==== the e2e suite on LocalStack and the rehearsal ($log) ===="
cat "$log"
if [ "$status" -ne 0 ]; then
  echo "the suite on moto, the template checks or a lint failed (exit $status)" >&2
  exit "$status"
fi
if [ "$localstack_status" -ne 0 ]; then
  echo "the e2e suite on LocalStack or the rehearsal failed (exit $localstack_status)" >&2
  exit "$localstack_status"
fi
