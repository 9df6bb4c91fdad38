#!/usr/bin/env bash
# Images/s of two stoker builds on their own imports of one image set, alternating: ROUNDS
# rounds (default 5) of `bench loader --workers W --epochs 2` (W: $WORKERS, default 2), each round
# the old build, the new one with its default, and the new one with --dct-scaling. Prints one
# line of samples/s per round; compare medians (docs/BENCHMARKS.md, issue 23).
#
# Usage: bench/loader_rate_rounds.sh OLD_STOKER OLD_DATA NEW_STOKER NEW_DATA [ROUNDS]
set -euo pipefail
[ $# -ge 4 ] || { sed -n 2,7p "$0" >&2; exit 2; }
old=$1 old_data=$2 new=$3 new_data=$4 rounds=${5:-5}
workers=${WORKERS:-2}

rate() {
  "$@" --workers "$workers" --epochs 2 --json 2>/dev/null |
    /usr/bin/python3 -c 'import json, sys; print(round(json.load(sys.stdin)["samples_per_s"]))'
}
for i in $(seq "$rounds"); do
  a=$(rate "$old" bench loader --data "$old_data")
  b=$(rate "$new" bench loader --data "$new_data")
  c=$(rate "$new" bench loader --data "$new_data" --dct-scaling)
  echo "round $i: old $a  new $b  new --dct-scaling $c"
done
