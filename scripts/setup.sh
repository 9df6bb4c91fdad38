#!/usr/bin/env bash
# Installs everything stoker needs on Debian 12 (run as root): Debian's packages (compilers,
# libraries, data), FFmpeg and libjpeg-turbo built static from Debian's sources
# (scripts/build_ffmpeg.sh, scripts/build_libjpeg.sh, into ~/.cache/stoker/: about 5 minutes
# once) and the project's Python environment, a virtual environment at $STOKER_VENV (default
# ~/.cache/stoker/venv, shared by every checkout on the machine) holding PyTorch and the rest of
# scripts/requirements.txt from PyPI (about 5 GB on disk; a 3 GB download once).
# Idempotent: when everything is present it does nothing and returns in well under a second.
# `setup.sh --venv-path` prints the environment's path and does nothing else.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv=${STOKER_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/stoker/venv}
if [ "${1:-}" = --venv-path ]; then
  echo "$venv"
  exit 0
fi

packages=(
  build-essential cmake ninja-build pkg-config ccache clang clang-format
  libgloo-dev
  libturbojpeg0-dev libjpeg62-turbo-dev libjpeg-turbo-progs libspng-dev libhwy-dev libxxhash-dev libcli11-dev nlohmann-json3-dev libfmt-dev zlib1g-dev
  libexpat1-dev
  ffmpeg libavformat-dev libavcodec-dev libavutil-dev libswscale-dev libavfilter-dev
  nasm libdav1d-dev libffmpeg-nvenc-dev
  libgtest-dev libgmock-dev libbenchmark-dev hyperfine chromium linux-perf
  dataset-fashion-mnist mate-backgrounds
  libdlpack-dev python3-dev python3-venv
  libcurl4-openssl-dev nginx
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: missing packages: ${missing[*]}; run as root to install them" >&2
    exit 1
  fi
  echo "setup: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

# The FFmpeg the video layer links: Debian's, built slim and static once (scripts/build_ffmpeg.sh).
bash "$root/scripts/build_ffmpeg.sh"
# The libjpeg the image layer links: Debian's, built static once (scripts/build_libjpeg.sh).
bash "$root/scripts/build_libjpeg.sh"

# The Python environment, remade only when its requirements changed (its stamp):
# scripts/requirements.txt, or $STOKER_REQUIREMENTS (scripts/test_torch.sh's).
requirements=${STOKER_REQUIREMENTS:-$root/scripts/requirements.txt}
if ! cmp -s "$requirements" "$venv/stoker-requirements.txt"; then
  echo "setup: installing $requirements (PyTorch from PyPI) into $venv" >&2
  [ -x "$venv/bin/python" ] || /usr/bin/python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip >&2
  "$venv/bin/python" -m pip install --quiet -r "$requirements" >&2
  cp "$requirements" "$venv/stoker-requirements.txt"
fi
# python/tests/test_wheel.py's pyarrow of another version than the Arrow the wheel carries, in a
# folder of its own beside the environment (on no path): 17.0.0, or 18.0.0 on CPython 3.13 and
# later (17.0.0 has no wheel for them; scripts/test_cpython.sh).
other_version=$("$venv/bin/python" -c \
  'import sys; print("17.0.0" if sys.version_info < (3, 13) else "18.0.0")')
other_pyarrow=$venv/pyarrow-$other_version
if [ ! -d "$other_pyarrow/pyarrow" ]; then
  echo "setup: installing pyarrow $other_version into $other_pyarrow" >&2
  "$venv/bin/python" -m pip install --quiet --no-deps --target "$other_pyarrow" \
    "pyarrow==$other_version" >&2
fi
# .venv in the checkout names the project's environment (git ignores it): `.venv/bin/python
# bench/...`.
if [ -z "${STOKER_REQUIREMENTS:-}" ] && [ "$(readlink "$root/.venv" 2>/dev/null)" != "$venv" ]; then
  ln -sfn "$venv" "$root/.venv"
fi
