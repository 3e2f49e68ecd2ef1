#!/usr/bin/env bash
# Times one phase of `make test` and records it in target/phases.tsv (name, seconds, exit
# status), so that `.ci/run` can print where a cold run's time went.
#   scripts/phase.sh NAME CMD [ARGS...]   runs CMD, prints "phase NAME: N s", exits as CMD did
#   scripts/phase.sh --reset              starts a new record
#   scripts/phase.sh --report             prints the record as a table
set -uo pipefail
cd "$(dirname "$0")/.."
record=target/phases.tsv
mkdir -p target
case "${1:-}" in
  --reset)
    : > "$record"
    exit 0
    ;;
  --report)
    [ -s "$record" ] || exit 0
    echo "phases (seconds; the e2e passes on moto and LocalStack run at the same time):"
    awk -F'\t' '{ printf "  %-16s %6d s%s\n", $1, $2, ($3 == 0 ? "" : "  (exit " $3 ")") }' "$record"
    exit 0
    ;;
  "" | -*)
    echo "usage: scripts/phase.sh NAME CMD [ARGS...] | --reset | --report" >&2
    exit 2
    ;;
esac
name=$1
shift
start=$(date +%s)
"$@"
status=$?
took=$(( $(date +%s) - start ))
printf '%s\t%s\t%s\n' "$name" "$took" "$status" >> "$record"
echo "phase $name: $took s$([ "$status" -eq 0 ] || echo " (exit $status)")"
exit "$status"
