#!/usr/bin/env bash
# Installs everything stoker needs on Debian 12 (run as root). Idempotent: when every
# package is already present it does nothing and returns in well under a second.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config ccache clang clang-format
  libtorch-dev libopenblas0-pthread libgloo-dev
  libturbojpeg0-dev libjpeg62-turbo-dev libjpeg-turbo-progs libspng-dev libhwy-dev libxxhash-dev libcli11-dev nlohmann-json3-dev libfmt-dev zlib1g-dev
  libgtest-dev libgmock-dev libbenchmark-dev hyperfine chromium linux-perf
  dataset-fashion-mnist mate-backgrounds
  python3-torch python3-torchvision python3-pil python3-scipy
  pybind11-dev libdlpack-dev python3-dev python3-venv python3-pip python3-setuptools python3-wheel python3-numpy
  python3-pytest python3-h5py python3-lmdb python3-matplotlib
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "setup: missing packages: ${missing[*]}; run as root to install them" >&2
  exit 1
fi

echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
