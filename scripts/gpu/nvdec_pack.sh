#!/usr/bin/env bash
# Packs the NVDEC check for a lent GPU machine into DIR (default .gpu-probe, which the device
# tool carries when named): bench/nvdec_probe.c built against scripts/build_ffmpeg.sh's static
# FFmpeg (its cuvid decoders load the driver's libnvcuvid at run time), libdav1d beside it,
# two Kinetics-shaped clips of bench/make_kinetics_set.py's set KIN (340x256 H.264) and 720p
# H.264 and H.265 test patterns made by Debian's ffmpeg, and nvdec_run.sh. Run here, after
# scripts/setup.sh; then on the GPU machine: bash DIR/nvdec_run.sh.
#
# Usage: bash scripts/gpu/nvdec_pack.sh KIN [DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
kin=${1:?usage: nvdec_pack.sh KIN [DIR], KIN the folder of bench/make_kinetics_set.py}
out=${2:-$root/.gpu-probe}
prefix=$(readlink -f "${STOKER_FFMPEG_PREFIX:-$HOME/.cache/stoker/ffmpeg}")
[ -f "$prefix/complete" ] || { echo "nvdec_pack: no static FFmpeg at $prefix (scripts/build_ffmpeg.sh)" >&2; exit 1; }
mkdir -p "$out"
read -ra libs < <(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --libs libavformat libavcodec \
  libavutil)
gcc -O2 -o "$out/nvdec_probe" "$root/bench/nvdec_probe.c" -I"$prefix/include" "${libs[@]}"
cp -L /usr/lib/x86_64-linux-gnu/libdav1d.so.6 "$out/"
mapfile -t clips < <(find "$kin" -name '*.mp4' | sort | head -2)
cp "${clips[@]}" "$out/"
for codec in libx264:h264 libx265:hevc; do
  ffmpeg -loglevel error -y -f lavfi -i testsrc2=size=1280x720:rate=25 -t 10 -c:v "${codec%%:*}" \
    -g 250 -pix_fmt yuv420p -x265-params log-level=error "$out/t720_${codec##*:}.mp4"
done
cp "$root/scripts/gpu/nvdec_run.sh" "$out/"
du -sh "$out"
