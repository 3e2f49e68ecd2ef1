#!/usr/bin/env bash
# The test suite on both backends at once: unit tests and the e2e suite on moto in the
# foreground, the e2e suite on LocalStack beside it (its output kept, then printed whole, so the
# two never interleave). The e2e tests mostly wait on delays and emulators, so the two passes
# share 2 cores well: 759 s together against 1058 s one after the other (measured here, 2
# cores). Both run to the end; the exit status is the first failure's.
set -uo pipefail
cd "$(dirname "$0")/.."
log=target/e2e-localstack.log
mkdir -p target
# Job control puts the LocalStack pass in a process group of its own, which an interrupt of
# this script stops whole (cargo, the test binaries, and through their guards the emulators).
set -m
E2E_BACKEND=localstack cargo test --workspace --no-fail-fast --test '*' > "$log" 2>&1 &
localstack=$!
set +m
trap 'kill -INT -- -"$localstack" 2>/dev/null; wait "$localstack"; exit 130' INT TERM
cargo test --workspace --no-fail-fast
moto_status=$?
wait "$localstack"
localstack_status=$?
echo "==== the e2e suite on LocalStack ($log) ===="
cat "$log"
if [ "$moto_status" -ne 0 ]; then
  echo "the suite on moto failed (exit $moto_status)" >&2
  exit "$moto_status"
fi
if [ "$localstack_status" -ne 0 ]; then
  echo "the e2e suite on LocalStack failed (exit $localstack_status)" >&2
  exit "$localstack_status"
fi
