#!/usr/bin/env bash
# Prints what the `stoker` binary STOKER answers to a fixed set of commands (training runs with
# fixed seeds, a resume, inspect, verify and bad inputs), timings and progress lines masked, so
# that two builds can be compared with diff: the check that a refactoring changed no output.
#
#   bash scripts/cli_outputs.sh OLD/stoker > old.txt; bash scripts/cli_outputs.sh build/stoker > new.txt
#   diff old.txt new.txt   # only the checkpoints' random name suffixes differ
#
# Uses the default data (Fashion-MNIST) under $STOKER_DATA (default: a temporary folder).
set -u
bin=$(realpath "$1")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export STOKER_DATA=${STOKER_DATA:-$work/data}
cd "$work"
mask() {
  grep -Ev " batch [0-9]+/[0-9]+ " |
    sed -E 's/[0-9.]+k? (samples|images|batches)\/s/N \1\/s/g; s/[0-9]+(\.[0-9]+)? (s|ms|us)\b/N \2/g' |
    sed "s#$work#WORK#g"
}
run() {
  echo "\$ stoker $*"
  timeout 900 "$bin" "$@" 2>&1 | mask
  echo "exit ${PIPESTATUS[0]}"
}
test_set=$STOKER_DATA/fashion-mnist/test
run train --epochs 1 --max-steps 40 --workers 0 --seed 1 --threads 1
run train --epochs 1 --max-steps 30 --workers 2 --seed 2 --threads 1 --batch 128 --optimizer sgd \
  --momentum 0.9 --schedule step --step-size 5 --gamma 0.5 --amp bf16
run train --epochs 2 --workers 1 --seed 3 --threads 1 --model cnn --batch 512 --log log.jsonl \
  --checkpoint-dir ck --save-model m.pt --data "$test_set"
run train --epochs 3 --workers 1 --seed 3 --threads 1 --model cnn --batch 512 --checkpoint-dir ck \
  --resume --data "$test_set"
run inspect "$test_set"
run verify "$test_set"
run train --batch 0
run train --workers -3
run train --optimizer foo
run train --amp x
run train --schedule y
run train --verify z
run train --model nosuch
run convert idx /nonexistent --out o
run convert imagefolder /nonexistent --out o
run inspect /nonexistent
run bench loader --workers 0 --epochs 1 --min-seconds 0 --batch 0
