#!/usr/bin/env bash
# Builds the libjpeg the image layer links: exactly the version of Debian 12's own
# (libjpeg-turbo, whose decode the tests compare with PIL's byte for byte), from Debian's source
# package (scripts/debian_source.sh), with Debian's compiler flags and SIMD, static and
# position-independent, so that the Python extension carries it inside with its symbols hidden
# (src/stoker/python/exports.map) instead of needing `libjpeg.so.62` by name: a process that has
# loaded another library of that name first (torchvision 0.19 carries an older one, without
# jpeg_crop_scanline) can still import stoker.
#
# It goes to ~/.cache/stoker/libjpeg-<version>-<key of the flags>, and ~/.cache/stoker/libjpeg
# links to it: CMake finds it there (src/stoker/image/CMakeLists.txt). Idempotent: a finished
# build is kept and not redone (about a minute on two cores otherwise).
# scripts/setup.sh calls it, after installing Debian's packages (cmake, nasm).
set -euo pipefail
cache=${XDG_CACHE_HOME:-$HOME/.cache}/stoker
# The version Debian installs (1:2.1.5-2): its source is built.
if ! version=$(dpkg-query -W -f='${Version}' libjpeg62-turbo 2>/dev/null); then
  echo "build_libjpeg: Debian's libjpeg62-turbo is not installed (scripts/setup.sh installs it)" >&2
  exit 1
fi
upstream=${version#*:}
upstream=${upstream%%-*}

# Debian's flags, less the map of the directory it is run from (the key would follow it).
cflags=$(echo "$(dpkg-buildflags --get CFLAGS) $(dpkg-buildflags --get CPPFLAGS)" |
  sed 's/-ffile-prefix-map=[^ ]* //')
options=(
  -DCMAKE_BUILD_TYPE=None -DCMAKE_POSITION_INDEPENDENT_CODE=ON
  -DENABLE_SHARED=OFF -DENABLE_STATIC=ON -DWITH_TURBOJPEG=OFF -DWITH_SIMD=1 -DREQUIRE_SIMD=ON
)
key=$(printf '%s\n' "$version" "$cflags" "${options[@]}" | sha256sum | cut -c1-12)
prefix=$cache/libjpeg-$upstream-$key

if [ ! -f "$prefix/complete" ]; then
  echo "build_libjpeg: libjpeg-turbo $version (Debian's source, static) into $prefix" >&2
  work=$cache/libjpeg-build-$key
  rm -rf "$prefix"
  bash "$(dirname "${BASH_SOURCE[0]}")/debian_source.sh" libjpeg-turbo "$version" "$work"
  CFLAGS="$cflags" cmake -S "$work/src" -B "$work/build" -G Ninja \
    -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_INSTALL_LIBDIR="$prefix/lib" "${options[@]}" >&2
  ninja -C "$work/build" >&2
  ninja -C "$work/build" install >&2
  rm -rf "$work"
  touch "$prefix/complete"
fi
ln -sfn "$prefix" "$cache/libjpeg"
