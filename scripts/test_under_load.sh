#!/usr/bin/env bash
# Runs the README's test command (scripts/test.sh, every stage) RUNS times in a row (default 5)
# with a busy loop on every core beside it, the check that no test depends on the machine's
# load. Prints one line per run (its summary and time) and exits 0 only if every run passed.
# Each run's whole output is kept in $STOKER_LOAD_LOG_DIR (default build/load-runs/).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

runs=${1:-5}
log_dir=${STOKER_LOAD_LOG_DIR:-build/load-runs}
mkdir -p "$log_dir"

hogs=()
stop_hogs() { [ ${#hogs[@]} -eq 0 ] || kill "${hogs[@]}" 2>/dev/null || true; }
trap stop_hogs EXIT
for _ in $(seq "$(nproc)"); do
  (while :; do :; done) &
  hogs+=($!)
done
echo "test_under_load: $runs runs of scripts/test.sh beside ${#hogs[@]} busy loops"

failed_runs=0
for i in $(seq "$runs"); do
  start=$SECONDS
  rc=0
  bash scripts/test.sh >"$log_dir/run-$i.log" 2>&1 || rc=$?
  [ "$rc" -eq 0 ] || failed_runs=$((failed_runs + 1))
  echo "run $i: $(tail -n1 "$log_dir/run-$i.log") in $((SECONDS - start)) s (exit $rc)"
done
echo "test_under_load: $((runs - failed_runs)) of $runs runs passed"
[ "$failed_runs" -eq 0 ]
