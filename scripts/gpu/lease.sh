#!/usr/bin/env bash
# A lent GPU machine's work in one call of the device tool: the parts of build.sh and the phases
# of run.sh named, in order, each one's output in one tar, $OUT/all.tar (the tool brings back at
# most 8 files), refreshed every 10 s so that a call stopped at its limit still brings back
# what ran. The photos and the wheels of scripts/gpu/pack.sh's folder are used in place
# (STOKER_PHOTOS; the wheels installed into a folder on PYTHONPATH).
#
# Usage, on the GPU machine in the source tree with .gpu-pack/ carried:
#   bash scripts/gpu/lease.sh [--dry-run] python env cuda data feed18 feed50
#   (python, cpp: build.sh's parts; the rest: run.sh's phases, --dry-run theirs)
# Environment: as build.sh's and run.sh's (STOKER_GPU_IMAGES, STOKER_GPU_SECONDS, ...).
# Exit status: the first failure's; every part runs.
set -uo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
back=${OUT:?lease.sh: OUT must name the folder the device tool brings back}
pack=${STOKER_GPU_PACK:-$root/.gpu-pack}
work=$(mktemp -d)
export OUT=$work/out STOKER_PHOTOS=$pack/photos PYTHONUNBUFFERED=1
mkdir -p "$OUT"

snapshot() { tar -cf "$back/.all.tar" -C "$OUT" . 2>/dev/null && mv "$back/.all.tar" "$back/all.tar"; }
(while sleep 10; do snapshot; done) &
keeper=$!

if compgen -G "$pack/wheels/*.whl" >/dev/null; then
  "${PYTHON:-python3}" -m pip install -q --no-index --no-deps --no-compile --target "$work/site" \
    "$pack"/wheels/*.whl && export PYTHONPATH=$work/site${PYTHONPATH:+:$PYTHONPATH}
fi

dry=()
if [ "${1:-}" = --dry-run ]; then
  dry=(--dry-run)
  shift
fi
status=0
start=$SECONDS
for part in "$@"; do
  echo "== $part at $((SECONDS - start)) s"
  rc=0
  case $part in
    python | cpp)
      bash "$root/scripts/gpu/build.sh" "$part" >"$OUT/build-$part.log" 2>&1 || rc=$?
      tail -3 "$OUT/build-$part.log"
      ;;
    *) bash "$root/scripts/gpu/run.sh" "${dry[@]}" "$part" 2>&1 | tail -25 || rc=$? ;;
  esac
  [ "$status" = 0 ] && status=$rc
done
echo "== done at $((SECONDS - start)) s, exit $status"
kill "$keeper"
snapshot
exit "$status"
