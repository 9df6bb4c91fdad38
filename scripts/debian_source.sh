#!/usr/bin/env bash
# Fetches and unpacks a Debian source package, exactly the version given, from the Debian
# mirror the machine installs from (its deb lines as deb-src, in an apt configuration of this
# script's own: the system's is left as it is), checked against the archive's signed index and
# its patches applied by dpkg-source.
#
#   scripts/debian_source.sh PACKAGE VERSION WORK [SUITE]
#       unpacks into WORK/src (WORK is made; what WORK held is removed first); SUITE (such as
#       trixie): from that suite of deb.debian.org instead of the machine's own suites
#
# scripts/build_ffmpeg.sh, scripts/build_libjpeg.sh and scripts/build_cpython.sh build from what
# it unpacks.
set -euo pipefail
package=$1 version=$2 work=$3 suite=${4:-}
rm -rf "$work"
mkdir -p "$work/apt/lists/partial" "$work/apt/archives/partial"
sources=/etc/apt/sources.list.d/debian.sources
if [ -n "$suite" ]; then
  cat >"$work/apt/debian.sources" <<SOURCES
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: $suite
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
elif [ -f "$sources" ]; then
  sed 's/^Types: deb$/Types: deb-src/' "$sources" >"$work/apt/debian.sources"
else
  cat >"$work/apt/debian.sources" <<'SOURCES'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
fi
apt=(apt-get -q -o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts="$work/apt"
     -o Dir::State::Lists="$work/apt/lists" -o Dir::Cache="$work/apt" -o Debug::NoLocking=1)
"${apt[@]}" update >&2
(cd "$work" && "${apt[@]}" source --download-only "$package=$version" >&2)
(cd "$work" && dpkg-source -q -x "${package}"_*.dsc src >&2)  # checks the files, applies the patches
