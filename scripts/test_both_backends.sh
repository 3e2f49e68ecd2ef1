#!/usr/bin/env bash
# The test suite on both backends at once, each part timed (scripts/phase.sh): in the
# foreground the unit tests, the simulation, the e2e suite on moto, then the template checks and
# the deploy rehearsal; beside them the e2e suite on LocalStack (its output kept, then printed
# whole, so the two never interleave). The e2e tests mostly wait on delays and emulators, so the
# two passes share 2 cores well: 759 s together against 1058 s one after the other (measured
# here, 2 cores). Every part runs to the end; the exit status is the first failure's.
#
# One part alone: `scripts/test_both_backends.sh unit|simulation|e2e-moto|e2e-localstack`.
set -uo pipefail
cd "$(dirname "$0")/.."
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
e2e_moto() { cargo test --workspace --no-fail-fast --test '*' 2>&1 | times; }
# The LocalStack pass leaves out the bench smoke tests (tests/bench_smoke.rs): `make bench`
# measures on moto, DynamoDB Local and the in-memory table, never on LocalStack, and the smoke
# tests only keep that code from rotting, which the moto pass does (91 s off this pass).
e2e_localstack() {
  # `lifecycle` first: its herds take the machine-wide turn (`rig::alone`), and in
  # alphabetical order it ran at about the time of the moto pass's `lifecycle`, so that each
  # pass waited on the other's herds.
  local rest=() f name rc=0 s
  for f in tests/tests/*.rs crates/cli/tests/*.rs; do
    name=$(basename "$f" .rs)
    case "$name" in lifecycle | bench_smoke) ;; *) rest+=(--test "$name") ;; esac
  done
  E2E_BACKEND=localstack cargo test --workspace --no-fail-fast --test lifecycle 2>&1 | times || rc=$?
  E2E_BACKEND=localstack cargo test --workspace --no-fail-fast "${rest[@]}" 2>&1 | times || { s=$?; [ "$rc" -ne 0 ] || rc=$s; }
  return "$rc"
}

export -f times unit simulation e2e_moto e2e_localstack
case "${1:-all}" in
  unit | simulation | e2e-moto | e2e-localstack) $phase "$1" bash -o pipefail -c "${1/-/_}"; exit ;;
  all) ;;
  *) echo "usage: $0 [unit|simulation|e2e-moto|e2e-localstack]" >&2; exit 2 ;;
esac

log=target/e2e-localstack.log
mkdir -p target
# Job control puts the LocalStack pass in a process group of its own, which an interrupt of
# this script stops whole (cargo, the test binaries, and through their guards the emulators).
set -m
# The dependency lint (cargo-machete's own build is most of its minute) and the template lint
# (cfn-lint and sam validate, 39 s, once a serial phase before the tests) follow the LocalStack
# pass there: that pass ended about 100 s before the foreground's rehearsal did, and with the
# lint after it the two sides end within about 15 s of each other (982 s against 970 s in a cold
# run of fb0a632; in the foreground the lint added 55-64 s to every run).
background() {
  local rc=0 s
  $phase e2e-localstack bash -o pipefail -c e2e_localstack || rc=$?
  $phase lint-deps make --no-print-directory lint-deps || { s=$?; [ "$rc" -ne 0 ] || rc=$s; }
  $phase lint make --no-print-directory lint-template || { s=$?; [ "$rc" -ne 0 ] || rc=$s; }
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
# The LocalStack pass is the longer one (about 800 s against 650 s on moto, cold, 2 cores):
# the template checks and the deploy rehearsal fill the foreground's wait for it instead of
# running before both passes (measured: 178 s off the critical path).
for step in "template template-test infra-test" "rehearsal rehearse"; do
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
echo "==== the e2e suite on LocalStack, then the dependency and template lints ($log) ===="
cat "$log"
if [ "$status" -ne 0 ]; then
  echo "the suite on moto failed (exit $status)" >&2
  exit "$status"
fi
if [ "$localstack_status" -ne 0 ]; then
  echo "the e2e suite on LocalStack or a lint failed (exit $localstack_status)" >&2
  exit "$localstack_status"
fi
