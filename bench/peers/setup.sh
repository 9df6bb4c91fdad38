#!/usr/bin/env bash
# Installs the peers of the side-by-side image benchmark (bench/peers/run.py), of the token
# benchmark (bench/token_peers.py: grain, litdata, megatron, torchtitan) and of the video
# benchmark (bench/video_loader.py: pyav, decord, spdl, dali), each in its own virtual
# environment under $STOKER_PEERS (default ~/.cache/stoker/peers/NAME), from PyPI and Debian only.
# Each environment sees the project's environment (scripts/setup.sh: torch, torchvision, numpy)
# behind its own packages, so every peer hands over the same torch.
# Not part of the test suite. Idempotent: a peer whose stamp matches is skipped.
#
# A peer that will not install leaves one line in $STOKER_PEERS/NAME.failed (the table shows it)
# and the others go on. Usage: bash bench/peers/setup.sh [NAME...]   (default: all)
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bash "$root/scripts/setup.sh" || exit 1
project_python=$(bash "$root/scripts/setup.sh" --venv-path)/bin/python
peers_dir=${STOKER_PEERS:-${XDG_CACHE_HOME:-$HOME/.cache}/stoker/peers}
mkdir -p "$peers_dir"

# NAME: Debian packages | pip arguments. Versions pinned: the table names them.
declare -A apt_of pip_of
apt_of[pillow_simd]="libjpeg62-turbo-dev zlib1g-dev"
pip_of[pillow_simd]="pillow-simd==12.1.1.post0"
apt_of[dali]=""
pip_of[dali]="nvidia-dali-cuda130==2.4.0"
apt_of[spdl]="libavcodec59 libavformat59 libavfilter8 libavdevice59 libavutil57 libswscale6 libswresample4"
pip_of[spdl]="spdl==0.8.0"
apt_of[ffcv]="pkg-config libopencv-dev libturbojpeg0-dev"
pip_of[ffcv]="ffcv==1.0.2"
apt_of[tfdata]=""
pip_of[tfdata]="tensorflow-cpu==2.21.0"
apt_of[webdataset]=""
pip_of[webdataset]="webdataset==1.0.2"
apt_of[hf_parquet]=""
pip_of[hf_parquet]="datasets==5.2.0"
apt_of[grain]=""
pip_of[grain]="grain==0.2.18"
apt_of[litdata]=""
pip_of[litdata]="litdata==0.2.76"
# 0.17 and later require Python 3.12; the project's environment has 3.11.
apt_of[megatron]=""
pip_of[megatron]="megatron-core==0.16.1"
apt_of[torchtitan]=""
pip_of[torchtitan]="torchtitan==0.3.0"
apt_of[pyav]=""
pip_of[pyav]="av==18.1.0"  # av 19 wants Python 3.12
apt_of[decord]=""
pip_of[decord]="decord==0.6.0"  # one py3-none wheel, its own FFmpeg
apt_of[stoker]=""
pip_of[stoker]="$root"
names=("${@:-pillow_simd dali spdl ffcv tfdata webdataset hf_parquet grain litdata megatron torchtitan pyav decord stoker}")
names=(${names[*]})

install_peer() {  # NAME: 0 when its environment is ready
  local name=$1 venv=$peers_dir/$1 stamp
  stamp="${apt_of[$name]}|${pip_of[$name]}|$(cd "$root" && git rev-parse HEAD 2>/dev/null)"
  [ "$name" = stoker ] || stamp="${apt_of[$name]}|${pip_of[$name]}"
  if [ -f "$venv/peer-stamp" ] && [ "$(cat "$venv/peer-stamp")" = "$stamp" ]; then
    return 0
  fi
  if [ -n "${apt_of[$name]}" ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      ${apt_of[$name]} >"$venv.log" 2>&1 || { echo "apt-get install ${apt_of[$name]} failed"; return 1; }
  fi
  rm -rf "$venv"
  "$project_python" -m venv "$venv" || { echo "venv failed"; return 1; }
  # The project's packages, behind the peer's own.
  "$project_python" -c 'import site; print(site.getsitepackages()[0])' \
    >"$("$venv/bin/python" -c 'import site; print(site.getsitepackages()[0])')/project-env.pth"
  # Pillow-SIMD's documented build: its AVX2 paths need the flag.
  local cc=${CC:-cc}
  [ "$name" != pillow_simd ] || cc="cc -mavx2"
  if ! CC="$cc" "$venv/bin/python" -m pip install --quiet ${pip_of[$name]} >>"$venv.log" 2>&1; then
    echo "pip install ${pip_of[$name]} failed: $(grep -E 'error|Error' "$venv.log" | tail -1 | cut -c1-200)"
    return 1
  fi
  echo "$stamp" >"$venv/peer-stamp"
}

for name in "${names[@]}"; do
  if [ -z "${pip_of[$name]+set}" ]; then
    echo "peers setup: unknown peer '$name' (${!pip_of[*]})" >&2
    exit 2
  fi
  rm -f "$peers_dir/$name.failed"
  echo "peers setup: $name" >&2
  if ! reason=$(install_peer "$name"); then
    echo "$reason" >"$peers_dir/$name.failed"
    echo "peers setup: $name not installed: $reason (log: $peers_dir/$name.log)" >&2
  fi
done
