#!/usr/bin/env bash
# The wheel on another CPython (docs/INSTALL.md): that interpreter built once
# (scripts/build_cpython.sh), a project environment of its own from scripts/requirements.txt
# ($STOKER_VENV_PY, default ~/.cache/stoker/venv-py<VERSION>: another 3 GB download once), and
# scripts/test.sh's `python` stage with it: the wheel built and repaired for that CPython (its
# own CMake folder, build-py<VERSION>/), installed into a fresh environment, the Python suite run
# there. Not part of CI (over its time). Ends with scripts/test.sh's `N passed, M failed` line.
#
# Usage: bash scripts/test_cpython.sh [VERSION]     (default 3.13)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
minor=${1:-3.13}
python=$(bash "$root/scripts/build_cpython.sh" "$minor" | tail -n 1)
venv=${STOKER_VENV_PY:-${XDG_CACHE_HOME:-$HOME/.cache}/stoker/venv-py$minor}
[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
STOKER_VENV=$venv STOKER_REQUIREMENTS=$root/scripts/requirements.txt \
  STOKER_PYTHON_BUILD_DIR=$root/build-py$minor STOKER_TEST_STAGES=python \
  bash "$root/scripts/test.sh"
