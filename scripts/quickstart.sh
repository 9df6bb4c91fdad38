#!/usr/bin/env bash
# The README's main command: installs what is missing (scripts/setup.sh: Debian's packages and
# PyTorch from PyPI), builds the `stoker` command into build/stoker against that PyTorch and
# runs the main job, `stoker train`, on the embedded default: Fashion-MNIST (converted on first
# use into $STOKER_DATA/fashion-mnist, else ~/.cache/stoker/fashion-mnist).
# STOKER_BUILD_DIR overrides build/.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
build_dir=${STOKER_BUILD_DIR:-build}

bash scripts/setup.sh
python=$(bash scripts/setup.sh --venv-path)/bin/python
generator=(-G Ninja)
[ ! -f "$build_dir/CMakeCache.txt" ] || generator=()  # keep the generator of an existing build
cmake -S . -B "$build_dir" "${generator[@]}" -DSTOKER_PYTHON="$python"
cmake --build "$build_dir" --target stoker_cli

# The main job: `stoker train` with no arguments converts Fashion-MNIST on first use, then
# trains the mlp for 5 epochs (batch 64, Adam 1e-3) and reports accuracy and where time went.
exec "$build_dir/stoker" train
