#!/usr/bin/env bash
# The compatibility run of docs/INSTALL.md's table: the C++ build with its tests and the Python
# suite (scripts/test.sh's `build` and `python` stages) against the newest torch and
# torchvision on PyPI instead of the pinned ones. Its own environment, $STOKER_VENV_NEWEST
# (default ~/.cache/stoker/venv-newest: another 3 GB download once, 5 GB on disk), from
# scripts/requirements.txt with torch and torchvision unpinned; its own C++ build folder,
# build-newest/. Not part of CI. Ends with scripts/test.sh's `N passed, M failed` line.
#
# Usage: bash scripts/test_newest_torch.sh [STAGES]     (default "build python")
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/stoker
venv=${STOKER_VENV_NEWEST:-$cache/venv-newest}
mkdir -p "$cache"
requirements=$cache/requirements-newest.txt
sed -e 's/^torch==.*/torch/' -e 's/^torchvision==.*/torchvision/' \
  "$root/scripts/requirements.txt" >"$requirements"
# pip keeps what satisfies an unpinned line: upgrade torch and torchvision to the newest.
if [ -x "$venv/bin/python" ]; then
  "$venv/bin/python" -m pip install --quiet --upgrade torch torchvision
fi
STOKER_VENV=$venv STOKER_REQUIREMENTS=$requirements STOKER_BUILD_DIR=build-newest \
  STOKER_TEST_STAGES=${1:-build python} bash "$root/scripts/test.sh"
