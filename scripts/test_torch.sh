#!/usr/bin/env bash
# The compatibility runs of docs/INSTALL.md's table: scripts/test.sh's stages against another
# torch than the pinned one, in an environment of its own (~/.cache/stoker/venv-torch-<VERSION>:
# another 3 GB download once, 5 GB on disk) made from scripts/requirements.txt with torch
# pinned to VERSION, torchvision left to pip (it pins the torch it was built for), and
# torchcodec, whose builds each load one torch, taken unpinned for the newest and left out for
# an older torch (the tests that compare with it skip); its own C++ build folder,
# build-torch-<VERSION>/. Not part of CI (over its time: CI's oldest-torch stage runs the suite's
# files that depend on torch's version beside 2.4.1). Ends with scripts/test.sh's
# `N passed, M failed` line.
#
# Usage: bash scripts/test_torch.sh newest|VERSION [STAGES]
#   newest       the newest torch, torchvision and torchcodec on PyPI (upgraded on each run);
#                STAGES default "build python"
#   VERSION      e.g. 2.4.1, the oldest supported; STAGES default "python": the wheel (which
#                links no torch) installed beside that torch and the Python suite run there
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
version=${1:?usage: scripts/test_torch.sh newest|VERSION [STAGES]}
cache=${XDG_CACHE_HOME:-$HOME/.cache}/stoker
venv=$cache/venv-torch-$version
mkdir -p "$cache"
requirements=$cache/requirements-torch-$version.txt
if [ "$version" = newest ]; then
  stages=${2:-build python}
  sed -e 's/^torch==.*/torch/' -e 's/^torchvision==.*/torchvision/' \
    -e 's/^torchcodec==.*/torchcodec/' "$root/scripts/requirements.txt" >"$requirements"
  # pip keeps what satisfies an unpinned line: upgrade the three to the newest.
  if [ -x "$venv/bin/python" ]; then
    "$venv/bin/python" -m pip install --quiet --upgrade torch torchvision torchcodec
  fi
else
  stages=${2:-python}
  sed -e "s/^torch==.*/torch==$version/" -e 's/^torchvision==.*/torchvision/' \
    -e '/^torchcodec==/d' "$root/scripts/requirements.txt" >"$requirements"
fi
STOKER_VENV=$venv STOKER_REQUIREMENTS=$requirements STOKER_BUILD_DIR=build-torch-$version \
  STOKER_TEST_STAGES=$stages bash "$root/scripts/test.sh"
