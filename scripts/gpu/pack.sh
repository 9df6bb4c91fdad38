#!/usr/bin/env bash
# Packs what a CUDA machine without Debian's packages (and without network) needs to build and
# benchmark stoker: Debian 12's .debs of stoker's C++ dependencies (apt-get download; build.sh
# unpacks them with dpkg -x into a prefix, nothing is installed), the photographs that
# bench/make_image_set.py cuts its images from, and the wheels of the Python packages the CUDA
# tests need that such a machine lacks (pycocotools, for the COCO-shaped set; lease.sh installs
# them) and of litdata (peers/litdata: the tokens phase's peer), for its Python
# (STOKER_GPU_PYTHON_VERSION, default 3.12). Run here, on Debian, with
# network to the archive and PyPI.
#
# Usage: bash scripts/gpu/pack.sh [DIR]      (default .gpu-pack, which .gitignore ignores)
# Prints the pack's size and the working tree's, which together must stay under the device
# tool's 64 MiB. Idempotent: a .deb already in DIR is not downloaded again.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
pack=${1:-$root/.gpu-pack}
photos=/usr/share/backgrounds/mate/nature

# The build's dependencies with their runtime libraries: the image layer (libjpeg-turbo, spng,
# Highway, zlib), VOC's XML (expat), checksums (xxHash), fmt, nlohmann-json, CLI11, DLPack and
# pybind11 (the Python extension), GoogleTest/GoogleMock, Gloo's headers (ProcessGroupGloo.hpp includes them),
# pkgconf for a machine without pkg-config, and libcurl (remote datasets) with what it loads.
packages=(
  libjpeg62-turbo libjpeg62-turbo-dev libspng0 libspng-dev libhwy1 libhwy-dev zlib1g zlib1g-dev
  libexpat1 libexpat1-dev
  libxxhash0 libxxhash-dev libfmt9 libfmt-dev nlohmann-json3-dev libcli11-dev libdlpack-dev
  libgtest-dev libgmock-dev libgloo-dev pybind11-dev pkgconf pkgconf-bin libpkgconf3
  libcurl4-openssl-dev libcurl4 libbrotli1 libgssapi-krb5-2 libidn2-0 libldap-2.5-0
  libnghttp2-14 libpsl5 librtmp1 libssh2-1 libssl3 libzstd1 libkrb5-3 libk5crypto3
  libkrb5support0 libcom-err2 libkeyutils1 libsasl2-2 libsasl2-modules-db libdb5.3
  libunistring2 libgnutls30 libhogweed6 libnettle8 libgmp10 libp11-kit0 libtasn1-6 libffi8
)

if [ ! -d "$photos" ]; then
  echo "pack: $photos not found (install mate-backgrounds: scripts/setup.sh)" >&2
  exit 1
fi
mkdir -p "$pack/debs" "$pack/photos"
# apt's download sandbox user must be able to write the folder.
chmod 0777 "$pack/debs"
(cd "$pack/debs" && apt-get download -q "${packages[@]}" >/dev/null \
  || { echo "pack: apt-get download failed; 'apt-get update' (as root), then retry" >&2
    exit 1; })
chmod 0755 "$pack/debs"
cp -u "$photos"/*.jpg "$pack/photos/"
python=${PYTHON:-$root/.venv/bin/python}
# download DIR SPEC...: wheels for the lent machine's Python, none of their dependencies.
download() {
  local dir=$1
  shift
  mkdir -p "$dir"
  "$python" -m pip download -q --no-deps --only-binary=:all: -d "$dir" \
    --python-version "${STOKER_GPU_PYTHON_VERSION:-3.12}" --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 "$@" \
    || { echo "pack: pip download of $* failed (network to PyPI?)" >&2
      exit 1; }
}
download "$pack/wheels" \
  "pycocotools==$("$python" -c 'import importlib.metadata as m; print(m.version("pycocotools"))')"
# The token benchmark's fastest peer (run.sh's tokens phase): litdata as bench/peers/setup.sh
# pins it, with the packages it requires that the lent machine's image lacks.
download "$pack/peers/litdata" "$(grep -o 'litdata==[0-9.]*' "$root/bench/peers/setup.sh")" \
  boto3==1.44.8 botocore==1.44.8 s3transfer==0.19.3 jmespath==1.1.0 obstore==0.12.1

tree_bytes=$(cd "$root" && git ls-files -co --exclude-standard -z | du -cb --files0-from=- \
  | tail -1 | cut -f1)
pack_bytes=$(du -sb "$pack" | cut -f1)
printf 'pack: %s: %d .debs, %d photos, %d wheels, %.1f MiB; working tree %.1f MiB; %.1f MiB of 64\n' \
  "$pack" "$(ls "$pack/debs" | wc -l)" "$(ls "$pack/photos" | wc -l)" "$(ls "$pack/wheels" | wc -l)" \
  "$(echo "$pack_bytes / 1048576" | bc -l)" "$(echo "$tree_bytes / 1048576" | bc -l)" \
  "$(echo "($pack_bytes + $tree_bytes) / 1048576" | bc -l)"
