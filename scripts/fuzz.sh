#!/usr/bin/env bash
# Builds a libFuzzer target with clang (ASan + UBSan, LibTorch-free core only) in build-fuzz/
# and runs it for a bounded time, single process, from a seed corpus of valid inputs written by
# the target's seeds program. Not part of CI. See docs/FUZZING.md.
#
# Usage: scripts/fuzz.sh [SECONDS] [TARGET]   (default 60 s, target shard)
#   shard  the shard reader (shard_fuzz; seeds: shard_fuzz_seeds; dictionary fuzz/shard.dict)
#   image  JPEG/PNG header, crop, streamed and full decode, JPEG/PNG transcode
#          (image_decode_fuzz; seeds: image_fuzz_seeds; dictionary fuzz/image.dict)
#   ops    the operation-call parser and every pixel/float operation on its parameters
#          (op_call_fuzz; seeds: op_call_fuzz_seeds; dictionary fuzz/ops.dict)
#   timm   timm's RandAugment config strings, their draws and operations
#          (timm_config_fuzz; seeds: timm_config_fuzz_seeds; dictionary fuzz/timm.dict)
#   coco   COCO's instances JSON and its segmentations' masks
#          (coco_json_fuzz; seeds: coco_json_fuzz_seeds; dictionary fuzz/coco.dict)
#   voc    Pascal VOC's annotation XML (voc_xml_fuzz; seeds: voc_xml_fuzz_seeds; fuzz/voc.dict)
#   listing  an image folder's saved listing (listing_fuzz; seeds: listing_fuzz_seeds; no
#          dictionary)
#   parquet  Parquet files read in place (parquet_fuzz; seeds: parquet_fuzz_seeds; no
#          dictionary): builds with -DSTOKER_WITH_PARQUET=ON, so STOKER_PYTHON (else python3)
#          must have pyarrow
#   tokens  a table's token column: the bytes as an Arrow IPC file and as a Parquet file, every
#          sample of a TokenSource over it read (token_column_fuzz; seeds:
#          token_column_fuzz_seeds; no dictionary): built with Parquet, as parquet is
#   tar    WebDataset tars' headers and samples, saved tar indexes, brace patterns
#          (tar_fuzz; seeds: tar_fuzz_seeds; no dictionary)
#   npy    .npy headers and a WebDataset member read as a field (npy_fuzz; seeds:
#          npy_fuzz_seeds; no dictionary)
#   megatron  token files' layouts: Megatron-LM's .idx, a .npy token array, tokens widened
#          (megatron_index_fuzz; seeds: megatron_index_fuzz_seeds; no dictionary)
#   http   an http(s):// folder's index page (http_index_fuzz; seeds: http_index_fuzz_seeds;
#          dictionary fuzz/http_index.dict)
#   video  a video in memory: demux, index, a clip's frames decoded (video_fuzz; seeds:
#          video_fuzz_seeds, which runs bench/make_video_set.py; no dictionary)
#   video-index  a video's index saved in the cache folder (saved_video_index_fuzz; seeds:
#          saved_video_index_fuzz_seeds, the saved indexes of bench/make_video_set.py's videos;
#          no dictionary)
# Environment: STOKER_FUZZ_BUILD_DIR overrides build-fuzz/; STOKER_FUZZ_CORPUS overrides the
# corpus directory (default build-fuzz/corpus for shard, build-fuzz/corpus-image for image,
# kept between runs, seeded when empty). STOKER_FUZZ_ARGS adds libFuzzer options (e.g.
# "-fork=1 -ignore_crashes=1" to keep going after a crash, one child process at a time). Crash
# inputs are written to build-fuzz/artifacts/ (build-fuzz/artifacts-image/ for image).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$(pwd)
seconds=${1:-60}
target=${2:-shard}
build_dir=${STOKER_FUZZ_BUILD_DIR:-build-fuzz}
case $target in
  shard)
    fuzzer=shard_fuzz seeds=shard_fuzz_seeds dict=fuzz/shard.dict suffix= ;;
  image)
    fuzzer=image_decode_fuzz seeds=image_fuzz_seeds dict=fuzz/image.dict suffix=-image ;;
  ops)
    fuzzer=op_call_fuzz seeds=op_call_fuzz_seeds dict=fuzz/ops.dict suffix=-ops ;;
  timm)
    fuzzer=timm_config_fuzz seeds=timm_config_fuzz_seeds dict=fuzz/timm.dict suffix=-timm ;;
  coco)
    fuzzer=coco_json_fuzz seeds=coco_json_fuzz_seeds dict=fuzz/coco.dict suffix=-coco ;;
  voc)
    fuzzer=voc_xml_fuzz seeds=voc_xml_fuzz_seeds dict=fuzz/voc.dict suffix=-voc ;;
  listing)
    fuzzer=listing_fuzz seeds=listing_fuzz_seeds dict= suffix=-listing ;;
  tar)
    fuzzer=tar_fuzz seeds=tar_fuzz_seeds dict= suffix=-tar ;;
  npy)
    fuzzer=npy_fuzz seeds=npy_fuzz_seeds dict= suffix=-npy ;;
  megatron)
    fuzzer=megatron_index_fuzz seeds=megatron_index_fuzz_seeds dict= suffix=-megatron ;;
  http)
    fuzzer=http_index_fuzz seeds=http_index_fuzz_seeds dict=fuzz/http_index.dict suffix=-http ;;
  video)
    fuzzer=video_fuzz seeds=video_fuzz_seeds dict= suffix=-video ;;
  video-index)
    fuzzer=saved_video_index_fuzz seeds=saved_video_index_fuzz_seeds dict= suffix=-video-index ;;
  parquet)
    fuzzer=parquet_fuzz seeds=parquet_fuzz_seeds dict= suffix=-parquet ;;
  tokens)
    fuzzer=token_column_fuzz seeds=token_column_fuzz_seeds dict= suffix=-tokens ;;
  *)
    echo "fuzz.sh: unknown target '$target' (shard, image, ops, timm, coco, voc, listing, tar," \
      "npy, megatron, parquet, tokens, http, video, video-index)" >&2
    exit 2 ;;
esac
with_parquet=OFF
case $target in parquet | tokens) with_parquet=ON ;; esac
corpus=${STOKER_FUZZ_CORPUS:-$build_dir/corpus$suffix}
artifacts=$build_dir/artifacts$suffix

export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
CC=clang CXX=clang++ cmake -S . -B "$build_dir" -G Ninja -DSTOKER_BUILD_FUZZ=ON \
  -DSTOKER_SANITIZE=address,undefined -DSTOKER_WITH_TORCH=OFF -DSTOKER_BUILD_TESTS=OFF \
  -DSTOKER_BUILD_BENCH=OFF -DSTOKER_WITH_PARQUET="$with_parquet" \
  ${STOKER_PYTHON:+-DSTOKER_PYTHON="$STOKER_PYTHON"} >/dev/null
cmake --build "$build_dir" -j2 --target "$fuzzer" "$seeds"

mkdir -p "$corpus" "$artifacts"
if [ -z "$(ls -A "$corpus")" ]; then
  "$build_dir/fuzz/$seeds" "$corpus"
fi

# The shard target writes each input to a file: keep those in memory when /dev/shm exists.
if [ -d /dev/shm ]; then export TMPDIR=/dev/shm; fi
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
"$build_dir/fuzz/$fuzzer" -max_total_time="$seconds" ${dict:+-dict="$dict"} \
  -artifact_prefix="$artifacts/" -print_final_stats=1 ${STOKER_FUZZ_ARGS:-} "$corpus"
