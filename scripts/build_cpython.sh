#!/usr/bin/env bash
# Builds a CPython other than Debian 12's 3.11, for building and testing the wheel on it
# (scripts/test_cpython.sh): Debian 13's python3.13 from its source package
# (scripts/debian_source.sh, suite trixie), configured plainly (no PGO), into
# ~/.cache/stoker/cpython-3.13. Prints its python's path last. Idempotent: a finished build is
# kept (about 3 minutes on two cores otherwise). Not part of CI or of scripts/setup.sh.
#
#   scripts/build_cpython.sh [VERSION]   (default 3.13, the one Debian 13 has)
set -euo pipefail
minor=${1:-3.13}
# The Debian 13 source of each CPython it has (Debian 13 has no 3.12).
declare -A source_of=([3.13]="3.13.5-2+deb13u5")
if [ -z "${source_of[$minor]:-}" ]; then
  echo "build_cpython: no Debian source for CPython $minor (known: ${!source_of[*]})" >&2
  exit 1
fi
cache=${XDG_CACHE_HOME:-$HOME/.cache}/stoker
prefix=$cache/cpython-$minor
if [ ! -f "$prefix/complete" ]; then
  echo "build_cpython: python$minor ${source_of[$minor]} (Debian 13's source) into $prefix" >&2
  work=$cache/cpython-build-$minor
  rm -rf "$prefix"
  bash "$(dirname "${BASH_SOURCE[0]}")/debian_source.sh" "python$minor" "${source_of[$minor]}" \
    "$work" trixie
  # Debian's ensurepip refuses a "system" Python; its venvs still get pip.
  (cd "$work/src" && ./configure --prefix="$prefix" --with-ensurepip=no >&2 &&
    make -j"$(nproc)" >&2 && make install >&2)
  rm -rf "$work"
  touch "$prefix/complete"
fi
echo "$prefix/bin/python$minor"
