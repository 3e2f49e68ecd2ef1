#!/usr/bin/env bash
# The test suite on both backends at once, each part timed (scripts/phase.sh): in the
# foreground the unit tests, the simulation, the e2e suite on moto (in two streams at once), then
# the template checks, the deploy rehearsal and the lints; beside them the e2e suite on
# LocalStack (its output kept, then printed whole, so the two never interleave). The e2e tests
# mostly wait on delays and emulators, so the passes share 2 cores well: 759 s together against
# 1058 s one after the other (measured here, 2 cores). Every part runs to the end; the exit
# status is the first failure's.
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
# The moto pass in two streams at once, split by test binary into halves of about 450 s each
# (860 s one after the other in 89e0c3f's CI). `lifecycle` runs last in its stream, after the
# LocalStack pass's `lifecycle` (its first binary, about 210 s): their herds take the
# machine-wide turn (`rig::alone`), so that each would wait on the other's at once. The second
# stream's output is printed after the first's, whole.
MOTO_FIRST_STREAM=" aws_faults bench_smoke contract manage "
e2e_moto() {
  local first=() second=() f name rc=0 s other pid
  for f in tests/tests/*.rs crates/cli/tests/*.rs; do
    name=$(basename "$f" .rs)
    case "$MOTO_FIRST_STREAM" in
      *" $name "*) first+=(--test "$name") ;;
      *) [ "$name" = lifecycle ] || second+=(--test "$name") ;;
    esac
  done
  other=$(mktemp)
  (cargo test --workspace --no-fail-fast "${second[@]}" 2>&1 | times > "$other") &
  pid=$!
  cargo test --workspace --no-fail-fast "${first[@]}" 2>&1 | times || rc=$?
  cargo test --workspace --no-fail-fast --test lifecycle 2>&1 | times || { s=$?; [ "$rc" -ne 0 ] || rc=$s; }
  wait "$pid" || { s=$?; [ "$rc" -ne 0 ] || rc=$s; }
  cat "$other"
  rm -f "$other"
  return "$rc"
}
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

export MOTO_FIRST_STREAM
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
# With the moto pass in two streams, the LocalStack pass (about 1080 s) is the longer side: the
# dependency lint (cargo-machete's own build is most of its minute or two) and the template lint
# (cfn-lint, sam validate) follow the rehearsal in the foreground, which ends before it.
background() {
  $phase e2e-localstack bash -o pipefail -c e2e_localstack
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
# The LocalStack pass is the longer one (about 1080 s against about 450 s for the moto pass's
# two streams, cold, 2 cores): the template checks, the deploy rehearsal and the lints fill the
# foreground's wait for it instead of running before both passes.
for step in "template template-test infra-test" "rehearsal rehearse" "lint-deps lint-deps" "lint lint-template"; do
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
echo "==== the e2e suite on LocalStack ($log) ===="
cat "$log"
if [ "$status" -ne 0 ]; then
  echo "the suite on moto, the template checks, the rehearsal or a lint failed (exit $status)" >&2
  exit "$status"
fi
if [ "$localstack_status" -ne 0 ]; then
  echo "the e2e suite on LocalStack failed (exit $localstack_status)" >&2
  exit "$localstack_status"
fi
