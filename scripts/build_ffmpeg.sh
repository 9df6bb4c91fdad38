#!/usr/bin/env bash
# shellcheck disable=SC2054  # the commas separate configure's lists
# Builds the FFmpeg the video layer links: exactly the version of Debian 12's own (the one
# torchcodec loads from the system, to which the tests compare stoker's frames byte for byte),
# from Debian's source package (scripts/debian_source.sh), configured slim and static:
# the demuxers, decoders, parsers and filters src/stoker/video/ uses (mp4/mov, Matroska/WebM and
# AVI; H.264, H.265, VP9, MPEG-4 part 2 and AV1 through Debian's shared libdav1d, as Debian's
# FFmpeg decodes it), swscale with its x86 assembly (its SIMD paths decide the RGB bytes), PIC
# objects, no programs, no devices, no network, nothing found by autodetection (no X11, no GLib).
# NVIDIA's decoders (cuvid, nvdec) come in when Debian's header-only libffmpeg-nvenc-dev is
# installed: FFmpeg loads the driver at run time, if there is one.
#
# It goes to ~/.cache/stoker/ffmpeg-<version>-<key of the configure flags>, and ~/.cache/stoker/
# ffmpeg links to it: CMake finds it there (cmake/StokerVideo.cmake). Idempotent: a finished
# build is kept and not redone (about 4 minutes on two cores otherwise).
# scripts/setup.sh calls it, after installing Debian's packages (nasm, libdav1d-dev).
set -euo pipefail
cache=${XDG_CACHE_HOME:-$HOME/.cache}/stoker
# The version Debian installs (7:5.1.9-0+deb12u1): its source is built.
if ! version=$(dpkg-query -W -f='${Version}' libavcodec59 2>/dev/null); then
  echo "build_ffmpeg: Debian's libavcodec59 is not installed (scripts/setup.sh installs it)" >&2
  exit 1
fi
upstream=${version#*:}
upstream=${upstream%%-*}

components=(
  --disable-everything --disable-autodetect --disable-programs --disable-doc --disable-debug
  --disable-avdevice --disable-swresample --disable-postproc --disable-network
  --enable-pthreads --enable-zlib --enable-libdav1d
  --enable-protocol=file
  --enable-demuxer=mov,matroska,avi
  --enable-decoder=h264,hevc,vp9,mpeg4,libdav1d
  --enable-parser=h264,hevc,vp9,mpeg4video,av1
  --enable-filter=buffer,buffersink,copy,format,null,scale
)
if pkg-config --exists ffnvcodec; then
  components+=(
    --enable-ffnvcodec --enable-cuvid --enable-nvdec
    --enable-decoder=h264_cuvid,hevc_cuvid,vp9_cuvid,av1_cuvid,mpeg4_cuvid
    --enable-hwaccel=h264_nvdec,hevc_nvdec,vp9_nvdec,mpeg4_nvdec
  )
fi
key=$(printf '%s\n' "$version" "${components[@]}" | sha256sum | cut -c1-12)
prefix=$cache/ffmpeg-$upstream-$key

if [ ! -f "$prefix/complete" ]; then
  echo "build_ffmpeg: FFmpeg $version (Debian's source, slim and static) into $prefix" >&2
  work=$cache/ffmpeg-build-$key
  rm -rf "$prefix"
  bash "$(dirname "${BASH_SOURCE[0]}")/debian_source.sh" ffmpeg "$version" "$work"

  cd "$work/src"
  ./configure --prefix="$prefix" --enable-static --disable-shared --enable-pic \
    "${components[@]}" >&2
  make -j"$(nproc)" >&2
  make install >&2
  cd /
  rm -rf "$work"
  touch "$prefix/complete"
fi
ln -sfn "$prefix" "$cache/ffmpeg"
