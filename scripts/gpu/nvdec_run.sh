#!/usr/bin/env bash
# NVDEC through the static FFmpeg's cuvid decoders against its software decoders (one thread),
# on the same files (scripts/gpu/nvdec_pack.sh's folder, this script's): frames, the luma
# checksum (equal where NVDEC is exact), then, one decoder fed the file again after a warm-up
# pass, frames/s and the cores the process kept busy; two rounds each.
cd "$(dirname "$0")" || exit 1
nvidia-smi -L 2>&1 | head -1
grep -m1 "model name" /proc/cpuinfo
for file in *.mp4; do
  software=h264
  [[ $file == *hevc* ]] && software=hevc
  for _ in 1 2; do
    LD_LIBRARY_PATH=. ./nvdec_probe "$file" "$software" 6
    LD_LIBRARY_PATH=. timeout 60 ./nvdec_probe "$file" "${software}_cuvid" 6 2>&1 |
      grep -v pkt_timebase
  done
done
