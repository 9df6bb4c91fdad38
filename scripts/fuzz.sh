#!/usr/bin/env bash
# Builds the shard reader's libFuzzer target with clang (ASan + UBSan, LibTorch-free core only)
# in build-fuzz/ and runs it for a bounded time, single process, from a seed corpus of valid
# shards written by shard_fuzz_seeds. Not part of CI. See docs/FUZZING.md.
#
# Usage: scripts/fuzz.sh [SECONDS]   (default 60)
# Environment: STOKER_FUZZ_BUILD_DIR overrides build-fuzz/; STOKER_FUZZ_CORPUS overrides the
# corpus directory (default build-fuzz/corpus, kept between runs, seeded when empty).
# STOKER_FUZZ_ARGS adds libFuzzer options (e.g. "-fork=1 -ignore_crashes=1" to keep going
# after a crash, one child process at a time). Crash inputs are written to build-fuzz/artifacts/.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$(pwd)
seconds=${1:-60}
build_dir=${STOKER_FUZZ_BUILD_DIR:-build-fuzz}
corpus=${STOKER_FUZZ_CORPUS:-$build_dir/corpus}

export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
CC=clang CXX=clang++ cmake -S . -B "$build_dir" -G Ninja -DSTOKER_BUILD_FUZZ=ON \
  -DSTOKER_SANITIZE=address,undefined -DSTOKER_WITH_TORCH=OFF -DSTOKER_BUILD_TESTS=OFF \
  -DSTOKER_BUILD_BENCH=OFF >/dev/null
cmake --build "$build_dir" -j2 --target shard_fuzz shard_fuzz_seeds

mkdir -p "$corpus" "$build_dir/artifacts"
if [ -z "$(ls -A "$corpus")" ]; then
  "$build_dir/fuzz/shard_fuzz_seeds" "$corpus"
fi

# The target writes each input to a file: keep those in memory when /dev/shm exists.
if [ -d /dev/shm ]; then export TMPDIR=/dev/shm; fi
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
"$build_dir/fuzz/shard_fuzz" -max_total_time="$seconds" -dict=fuzz/shard.dict \
  -artifact_prefix="$build_dir/artifacts/" -print_final_stats=1 ${STOKER_FUZZ_ARGS:-} "$corpus"
