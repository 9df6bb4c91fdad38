#!/usr/bin/env bash
# Builds stoker on a machine that has Python, PyTorch (CUDA or not), CMake, a C++ compiler and
# none of Debian's packages: unpacks scripts/gpu/pack.sh's .debs into a prefix (dpkg -x; nothing
# is installed system-wide), then builds
#   python  the Python package against this machine's Python (pip install --target into
#           BUILD/site: run.sh puts it on PYTHONPATH), and
#   cpp     the C++ project (CLI, trainer, tests) against the LibTorch inside this Python's
#           PyTorch, found as everywhere (-DSTOKER_PYTHON, cmake/StokerTorch.cmake: a CUDA
#           torch with nvcc compiles the CUDA and NCCL code, without nvcc the build is CPU only).
#
# The pack has no FFmpeg (its Debian libraries weigh ~180 MB, over the device tool's 64 MiB):
# both builds are without video (cmake/StokerVideo.cmake), as is Parquet without pyarrow 26.0.1.
#
# Usage: bash scripts/gpu/build.sh [python|cpp|all]     (default all)
# Environment:
#   PYTHON              the Python with torch (default python3)
#   STOKER_GPU_PACK     pack.sh's folder (default .gpu-pack)
#   STOKER_GPU_BUILD    where everything goes (default build-gpu): prefix/, python/, site/,
#                       cpp/ and env.sh (the environment run.sh sources)
#   STOKER_GPU_JOBS     parallel jobs (default: the cores this process may use)
# Incremental: a second run rebuilds only what changed.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
what=${1:-all}
case $what in python | cpp | all) ;; *)
  echo "build.sh: unknown part '$what' (python, cpp, all)" >&2
  exit 2
  ;;
esac
PYTHON=${PYTHON:-python3}
pack=${STOKER_GPU_PACK:-$root/.gpu-pack}
build=${STOKER_GPU_BUILD:-$root/build-gpu}
jobs=${STOKER_GPU_JOBS:-$(nproc)}
prefix=$build/prefix
arch=x86_64-linux-gnu
mkdir -p "$build"
build=$(cd "$build" && pwd)
prefix=$build/prefix

if ! compgen -G "$pack/debs/*.deb" >/dev/null; then
  echo "build.sh: no .debs in $pack/debs (run scripts/gpu/pack.sh on Debian, carry the folder)" >&2
  exit 2
fi

# unpack DEB: its files into the prefix (dpkg-deb, or ar and tar where there is no dpkg).
unpack() {
  if command -v dpkg-deb >/dev/null; then
    dpkg-deb -x "$1" "$prefix"
    return
  fi
  local member
  member=$(ar t "$1" | grep '^data\.tar')
  case $member in
    *.xz) ar p "$1" "$member" | tar -xJ -C "$prefix" ;;
    *.zst) ar p "$1" "$member" | tar --zstd -x -C "$prefix" ;;
    *) ar p "$1" "$member" | tar -x -C "$prefix" ;;
  esac
}

# 1. The prefix: every .deb unpacked, pkg-config files pointed at the prefix.
stamp=$prefix/.debs
if [ ! -f "$stamp" ] || [ "$(ls "$pack/debs")" != "$(cat "$stamp")" ]; then
  rm -rf "$prefix"
  mkdir -p "$prefix"
  for deb in "$pack"/debs/*.deb; do unpack "$deb"; done
  find "$prefix" -name '*.pc' -exec sed -i -e "s#=/usr#=$prefix/usr#" \
    -e "s# -I/usr# -I$prefix/usr#g" -e "s# -L/usr# -L$prefix/usr#g" {} +
  ls "$pack/debs" >"$stamp"
fi
# The .debs' absolute links (libz.so -> /lib/.../libz.so.1.2.13) into the prefix: this machine's
# /lib may hold another version, and a dangling libz.so makes the linker take libz.a.
find "$prefix" -type l -lname '/*' ! -lname "$prefix/*" | while read -r link; do
  ln -sfn "$prefix$(readlink "$link")" "$link"
done

# 2. The environment every later step (and run.sh) uses.
torch_info=$("$PYTHON" -c 'import torch, torch.utils
print(torch.utils.cmake_prefix_path)
print(int(torch._C._GLIBCXX_USE_CXX11_ABI))
print(torch.__version__)
print(torch.version.cuda or "")') || {
  echo "build.sh: $PYTHON cannot import torch (set PYTHON)" >&2
  exit 2
}
mapfile -t info <<<"$torch_info"
torch_prefix=${info[0]} abi=${info[1]} torch_version=${info[2]} torch_cuda=${info[3]:-}
# The packed libraries (GoogleTest, fmt, ...) are Debian's, built with the new C++ ABI.
if [ "$abi" != 1 ]; then
  echo "build.sh: PyTorch $torch_version uses the old C++ ABI (_GLIBCXX_USE_CXX11_ABI=0);" \
    "the packed Debian libraries need the new one" >&2
  exit 2
fi

pkg_config=$(command -v pkg-config || echo "$prefix/usr/bin/pkgconf")
pybind11_dir=$("$PYTHON" -c 'import pybind11; print(pybind11.get_cmake_dir())' 2>/dev/null || true)

# CPATH names the multiarch folder too: Debian keeps jconfig.h and curl/ there, and the machine's
# own (another libjpeg's jconfig.h) would otherwise pair with the pack's jpeglib.h and library.
cat >"$build/env.sh" <<ENV
# Written by scripts/gpu/build.sh: the environment of this build (source it).
export PYTHON="$PYTHON"
export PKG_CONFIG="$pkg_config"
# The pack's .pc files alone, not this machine's own (PKG_CONFIG_LIBDIR replaces pkg-config's
# default folders): a dry run here then finds no FFmpeg either, as on a GPU machine.
export PKG_CONFIG_LIBDIR="$prefix/usr/lib/$arch/pkgconfig:$prefix/usr/share/pkgconfig"
unset PKG_CONFIG_PATH
export CPATH="$prefix/usr/include/$arch:$prefix/usr/include\${CPATH:+:\$CPATH}"
export LIBRARY_PATH="$prefix/usr/lib/$arch\${LIBRARY_PATH:+:\$LIBRARY_PATH}"
export LD_LIBRARY_PATH="$prefix/usr/lib/$arch:$prefix/lib/$arch\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
export PYTHONPATH="$build/site\${PYTHONPATH:+:\$PYTHONPATH}"
export STOKER_GPU_BUILD="$build"
export STOKER_CLI="\${STOKER_CLI:-$build/cpp/stoker}"
export TORCH_CUDA_ARCH_LIST="\${TORCH_CUDA_ARCH_LIST:-9.0}"
ENV
# shellcheck source=/dev/null
source "$build/env.sh"
export CCACHE_BASEDIR=$root CCACHE_NOHASHDIR=1
for header in jconfig.h curl/curl.h; do  # the pack's headers, not this machine's
  lines=$(echo "#include <$header>" | "${CXX:-c++}" -E -x c++ - 2>/dev/null || true)
  found=$(grep -m1 -o "\"[^\"]*/$header\"" <<<"$lines" || true)
  case $found in "\"$prefix/"*) echo "build.sh: <$header> is $found" ;; *)
    echo "build.sh: <$header> is ${found:-not found}, not the pack's in $prefix" >&2
    exit 2
    ;;
  esac
done

# The prefix's libraries on the run path too: the extension and programs load without env.sh.
cmake_common=(-G Ninja -DCMAKE_LIBRARY_ARCHITECTURE=$arch
  "-DCMAKE_PREFIX_PATH=$prefix/usr" -DPKG_CONFIG_EXECUTABLE="$pkg_config"
  "-DCMAKE_BUILD_RPATH=$prefix/usr/lib/$arch;$prefix/lib/$arch")
[ -n "$pybind11_dir" ] && cmake_common+=(-Dpybind11_DIR="$pybind11_dir")
# Parquet needs the pyarrow stoker pins (cmake/StokerParquet.cmake); another one: build without.
pinned=$(sed -n 's/^set(STOKER_PYARROW_VERSION \([0-9.]*\)).*/\1/p' "$root/cmake/StokerParquet.cmake")
have=$("$PYTHON" -c 'import pyarrow; print(pyarrow.__version__)' 2>/dev/null || true)
if [ "$have" != "$pinned" ]; then
  cmake_common+=(-DSTOKER_WITH_PARQUET=OFF)
  echo "build.sh: Parquet off (this Python's pyarrow: ${have:-none}; stoker pins $pinned)"
fi
echo "build.sh: PyTorch $torch_version (CUDA ${torch_cuda:-none}) from $torch_prefix," \
  "prefix $prefix, $jobs jobs"

# 3. The Python package (LibTorch-free): setup.py configures its CMake build with these.
if [ "$what" != cpp ]; then
  start=$SECONDS
  rm -rf "$build/site"
  STOKER_PYTHON_BUILD_DIR=$build/python CMAKE_BUILD_PARALLEL_LEVEL=$jobs \
    STOKER_CMAKE_ARGS="$(printf '%q ' "${cmake_common[@]}")" \
    "$PYTHON" -m pip install -q --no-build-isolation --no-deps --no-cache-dir \
    --target "$build/site" "$root"
  PYTHONUNBUFFERED=1 "$PYTHON" -X faulthandler -c 'import stoker, torch
print("build.sh: stoker", stoker.__version__, "from", stoker.__file__, "with torch",
torch.__version__, "| video", "built" if stoker._stoker.with_video else "off")'
  echo "build.sh: python package built in $((SECONDS - start)) s"
fi

# 4. The C++ project against this PyTorch's LibTorch.
if [ "$what" != python ]; then
  start=$SECONDS
  cmake -S "$root" -B "$build/cpp" "${cmake_common[@]}" -DSTOKER_PYTHON="$(command -v "$PYTHON")" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTOKER_BUILD_BENCH=OFF
  cmake --build "$build/cpp" -j "$jobs"
  echo "build.sh: C++ project built in $((SECONDS - start)) s ($STOKER_CLI)"
fi
