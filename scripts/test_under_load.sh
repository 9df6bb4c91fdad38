#!/usr/bin/env bash
# Runs the README's test command (scripts/test.sh: every stage, or those $STOKER_TEST_STAGES
# names) RUNS times in a row (default 5) with LOADS busy loops beside it (default one per core),
# the check that no test depends on the machine's load. Prints the CPU first, then one line per
# run (its summary and time), and exits 0 only if every run passed. Each run's whole output is
# kept in $STOKER_LOAD_LOG_DIR (default build/load-runs/), the CPU at its top.
#   scripts/test_under_load.sh [RUNS] [LOADS]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

runs=${1:-5}
loads=${2:-$(nproc)}
cpu=$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
log_dir=${STOKER_LOAD_LOG_DIR:-build/load-runs}
mkdir -p "$log_dir"

hogs=()
stop_hogs() { [ ${#hogs[@]} -eq 0 ] || kill "${hogs[@]}" 2>/dev/null || true; }
trap stop_hogs EXIT
for _ in $(seq "$loads"); do
  (while :; do :; done) &
  hogs+=($!)
done
echo "test_under_load: $runs runs of scripts/test.sh (stages: ${STOKER_TEST_STAGES:-all}) beside" \
  "${#hogs[@]} busy loops on $(nproc) cores of $cpu"

failed_runs=0
for i in $(seq "$runs"); do
  start=$SECONDS
  rc=0
  { echo "== cpu: $cpu, $(nproc) cores, ${#hogs[@]} busy loops"
    bash scripts/test.sh 2>&1; } >"$log_dir/run-$i.log" || rc=$?
  [ "$rc" -eq 0 ] || failed_runs=$((failed_runs + 1))
  echo "run $i: $(tail -n1 "$log_dir/run-$i.log") in $((SECONDS - start)) s (exit $rc)"
done
echo "test_under_load: $((runs - failed_runs)) of $runs runs passed"
[ "$failed_runs" -eq 0 ]
