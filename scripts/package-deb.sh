#!/usr/bin/env bash
# Builds the Debian package vigil_VERSION_ARCH.deb from the `make install` layout (PREFIX=/usr).
#
#   scripts/package-deb.sh [--output DIR]     default DIR: .build-release
#
# - the release `vigil` built by `make` (Swift runtime linked statically, git revision recorded),
#   stripped; the version is the one the built `vigil --version` reports (Sources/VigilBase/VigilVersion.swift);
# - Depends: computed from the binary by dpkg-shlibdeps (the C libraries' runtime packages:
#   libsodium23, libpulse0, libasound2, libsystemd0, libsndfile1, libespeak-ng1, libc6, …);
#   Recommends: a sound server for the audio plugins (a supervisor-only host needs none);
# - man pages and documents compressed, /usr/share/doc/vigil/copyright and changelog.gz as Debian
#   policy wants them; no maintainer scripts (nothing to set up: the units, the update timers included, are not
#   enabled for anyone);
# - lintian run on the result (when installed): it must report nothing but the tags overridden, with
#   their reasons, in packaging/debian/lintian-overrides;
# - the journal catalog in /usr/lib/systemd/catalog: systemd's dpkg trigger on that directory
#   rebuilds journalctl's catalog database on install and on purge (no maintainer script either).
# Prints the path of the .deb on its last line.
set -euo pipefail
cd "$(dirname "$0")/.."

out=.build-release
while (($#)); do
  case "$1" in
    --output) out=$2; shift 2 ;;
    *) echo "package-deb: unknown argument $1 (usage: scripts/package-deb.sh [--output DIR])" >&2; exit 64 ;;
  esac
done
for tool in dpkg-deb dpkg-shlibdeps fakeroot strip gzip make; do
  command -v "$tool" >/dev/null || { echo "package-deb: $tool is missing — run scripts/install-deps.sh" >&2; exit 1; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/vigil-deb-XXXXXX")
trap 'rm -rf "$work"' EXIT
stage=$work/root

start=$SECONDS
make --no-print-directory install PREFIX=/usr DESTDIR="$stage" >"$work/make.log" 2>&1 || {
  tail -40 "$work/make.log" >&2
  echo "package-deb: make install failed (above)" >&2
  exit 1
}
echo "package-deb: release build and install layout took $((SECONDS - start))s" >&2

vigil=$stage/usr/bin/vigil
version=$("$vigil" --version | awk '{print $2}')
revision=$("$vigil" --version --json | tr -d ' \n' | sed -n 's/.*"revision":"\([^"]*\)".*/\1/p')
arch=$(dpkg --print-architecture)
[[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || { echo "package-deb: vigil --version gave '$version'" >&2; exit 1; }

# Debian policy on top of the install layout.
helper=$stage/usr/libexec/vigil/vigil-plugin-helper
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$vigil" "$helper"
gzip -9n "$stage"/usr/share/man/man1/*.1
doc=$stage/usr/share/doc/vigil
rm "$doc/LICENSE"  # the license is in copyright (policy 12.5)
mv "$doc/CHANGELOG.md" "$doc/changelog"
gzip -9n "$doc/changelog" "$doc"/*.md
date=$(git log -1 --format=%cD 2>/dev/null || date -R)
cat >"$doc/copyright" <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: vigil
Comment: Built from revision ${revision:-unrecorded} by scripts/package-deb.sh.

Files: *
Copyright: 2026 The Vigil authors
License: Apache-2.0
 Licensed under the Apache License, Version 2.0 (the "License"); you may not use
 this software except in compliance with the License.
 .
 On Debian systems, the full text of the Apache License, Version 2.0 can be
 found in /usr/share/common-licenses/Apache-2.0.
EOF
# A native package (the version has no Debian revision): changelog.gz is the upstream changelog in
# Keep a Changelog form, and changelog.Debian.gz the packaging's own entry.
maintainer=${DEB_MAINTAINER:-Vigil maintainers <vigil@packages.invalid>}
printf 'vigil (%s) unstable; urgency=medium\n\n  * Release %s, built from revision %s; see changelog.gz.\n\n -- %s  %s\n' \
  "$version" "$version" "${revision:-unrecorded}" "$maintainer" "$date" | gzip -9n >"$doc/changelog.Debian.gz"
install -D -m 0644 packaging/debian/lintian-overrides "$stage/usr/share/lintian/overrides/vigil"

# Depends: from the binary's NEEDED entries and the installed libraries' shlibs/symbols files.
mkdir -p "$work/shlibs/debian"
printf 'Source: vigil\n\nPackage: vigil\nArchitecture: any\n' >"$work/shlibs/debian/control"
depends=$(cd "$work/shlibs" && dpkg-shlibdeps -O -e"$vigil" -e"$helper" 2>"$work/shlibdeps.log" | sed -n 's/^shlibs:Depends=//p') || {
  cat "$work/shlibdeps.log" >&2
  exit 1
}
[[ -n "$depends" ]] || { cat "$work/shlibdeps.log" >&2; echo "package-deb: dpkg-shlibdeps found no dependency" >&2; exit 1; }

mkdir -p "$stage/DEBIAN"
size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
cat >"$stage/DEBIAN/control" <<EOF
Package: vigil
Version: $version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $size
Depends: $depends
Recommends: pipewire-pulse | pulseaudio
Suggests: minisign
Section: admin
Priority: optional
Description: keep a Linux host application alive and its audio output awake
 Vigil keeps a long-running application (a signer node, a kiosk, a voice
 assistant, a media box) alive through signed keep-alive plugins listed in
 its vigil.toml: silent-engine keeps the audio output from suspending,
 supervisor restarts worker processes and speaks systemd's notify and
 watchdog protocol, soundscape plays an ambient soundscape.
 .
 Every plugin is activated only through a signed manifest whose key the host
 has trusted with "vigil plugin trust". This package holds the vigil
 command, the process shared-library plugins run in, the first-party
 manifests, man pages, shell completions, the user
 unit vigil.service, the system unit template vigil@.service, the timers
 vigil-plugin-update.timer and vigil-plugin-update@.timer that update a host's
 plugins from its repository (not enabled) and the journal catalog of
 Vigil's message ids. A supervisor-only host needs no sound server.
EOF
(cd "$stage" && find usr -type f -print0 | sort -z | xargs -0 md5sum) >"$stage/DEBIAN/md5sums"
find "$stage" -type d -exec chmod 0755 {} +
chmod 0644 "$stage/DEBIAN/control" "$stage/DEBIAN/md5sums"

mkdir -p "$out"
deb=$out/vigil_${version}_${arch}.deb
dpkg-deb --root-owner-group -Zxz --build "$stage" "$deb" >/dev/null
echo "package-deb: $deb ($(du -k "$deb" | cut -f1) KiB), Depends: $depends" >&2

if command -v lintian >/dev/null; then
  # Everything lintian reports is a failure except the overridden tags (with their reasons).
  if ! lintian --fail-on error,warning,info --display-info "$deb" >"$work/lintian.log" 2>&1; then
    cat "$work/lintian.log" >&2
    echo "package-deb: lintian found problems (above)" >&2
    exit 1
  fi
  grep -E '^[EWIP]:' "$work/lintian.log" >&2 || true
  echo "package-deb: lintian: clean but for the overrides in packaging/debian/lintian-overrides" >&2
else
  echo "package-deb: lintian is not installed, not run (scripts/install-deps.sh installs it)" >&2
fi
echo "$deb"
